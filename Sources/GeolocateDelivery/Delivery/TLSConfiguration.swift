import Foundation
import GeolocateConfig
import GeolocateModel
import NIOSSL

extension TLSFiles {

    /// The HTTPS client configuration these files make: only the CAs of `caFile` trusted
    /// (when it is set), `certFile` and `keyFile` presented to a server that asks; `nil` when
    /// no file is set, for the client's default (the system's CAs).
    ///
    /// The files are read here, once, with the limits of every file geolocate reads (a FIFO
    /// or device in their place would block the flush and every later one on its lock), and a
    /// key that does not belong to the certificate is found now rather than at each connection.
    /// - Parameter prefix: the settings' common part, such as `endpoints.primary`, for messages.
    /// - Throws: `GeolocateError.missingSetting` naming the key and the file (78).
    package func clientConfiguration(keys prefix: String) throws -> TLSConfiguration? {
        guard !isEmpty else { return nil }
        if (certFile == nil) != (keyFile == nil) {
            throw GeolocateError.missingSetting("\(prefix).certFile and \(prefix).keyFile go together: set both, or neither")
        }
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let caFile {
            configuration.trustRoots = .certificates(try TLSFiles.certificates(in: caFile, key: "\(prefix).caFile"))
        }
        if let certFile, let keyFile {
            configuration.certificateChain = try TLSFiles.certificates(in: certFile, key: "\(prefix).certFile").map { .certificate($0) }
            let bytes = try TLSFiles.contents(of: keyFile, key: "\(prefix).keyFile")
            do {
                configuration.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: bytes, format: .pem))
            } catch {
                throw GeolocateError.missingSetting("\(prefix).keyFile \(keyFile) holds no unencrypted PEM private key")
            }
            do {
                _ = try NIOSSLContext(configuration: configuration)
            } catch {
                throw GeolocateError.missingSetting("\(prefix).keyFile \(keyFile) is not the private key of \(prefix).certFile \(certFile)")
            }
        }
        return configuration
    }

    /// The PEM certificates in `file`.
    private static func certificates(in file: String, key: String) throws -> [NIOSSLCertificate] {
        let bytes = try contents(of: file, key: key)
        guard let certificates = try? NIOSSLCertificate.fromPEMBytes(bytes), !certificates.isEmpty else {
            throw GeolocateError.missingSetting("\(key) \(file) holds no PEM certificate")
        }
        return certificates
    }

    private static func contents(of file: String, key: String) throws -> [UInt8] {
        switch BoundedFile.read(file, limit: maximumBytes) {
        case .success(let data): return Array(data)
        case .failure(let failure): throw GeolocateError.missingSetting("\(key) \(file) \(failure.text(limit: maximumBytes))")
        }
    }
}
