import Crypto
import Foundation
import GeolocateConfig
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

/// The device's Ed25519 signing key (SPEC §15), and the public keys it replaced.
///
/// The file is PEM: the private key as PKCS#8 (`BEGIN PRIVATE KEY`, which `openssl pkey`
/// reads), then each retired public key (`BEGIN PUBLIC KEY`), newest first, so that `key show`
/// keeps listing a key a server may still hold tokens of. It is refused unless it is a regular
/// file of this user's that nobody else may read or write (0600): whoever reads it can sign
/// as this device.
package struct DeviceKey: Sendable {
    /// The key that signs.
    package let privateKey: Curve25519.Signing.PrivateKey
    /// The public keys of earlier keys, newest first.
    package let retired: [Curve25519.Signing.PublicKey]

    package init(privateKey: Curve25519.Signing.PrivateKey, retired: [Curve25519.Signing.PublicKey] = []) {
        self.privateKey = privateKey
        self.retired = retired
    }

    /// The largest key file read: a key and a few hundred retired ones.
    package static let maximumBytes = 256 * 1024

    /// Where the key is: `signing.keyFile`, else `/etc/geolocate/device-key` in system mode
    /// (not the state directory, which monitoring users may read), else `device-key` in the
    /// state directory.
    package static func path(settings: Settings, environment: [String: String], stateDirectory: String) -> String {
        if let file = settings[ConfigKey.signingKeyFile] { return file }
        if Paths.isSystemMode(environment: environment) { return Paths.systemDeviceKeyFile }
        return stateDirectory + "/device-key"
    }

    /// The key in `path`.
    /// - Throws: `GeolocateError.missingSetting` (78) naming the file and the command that makes
    ///   one: no key, a key others may read or write or that is not this user's, or a file that
    ///   holds no Ed25519 key.
    package static func load(from path: String) throws -> DeviceKey {
        func refused(_ why: String) -> GeolocateError {
            .missingSetting("device key \(path) \(why)")
        }
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { throw refused("does not exist; make one with: geolocate key init") }
            throw refused("cannot be read (\(ErrorText.posix(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else { throw refused("is not a regular file") }
        guard status.st_uid == geteuid() else { throw refused("belongs to another user; it must be the signing user's own (0600)") }
        guard status.st_mode & 0o077 == 0 else {
            throw refused("may be read or written by others (mode \(String(status.st_mode & 0o777, radix: 8))); chmod 600 it, or make a new one")
        }
        let data: Data
        switch BoundedFile.read(path, limit: maximumBytes) {
        case .success(let contents): data = contents
        case .failure(let failure): throw refused(failure.text(limit: maximumBytes))
        }
        guard let key = DeviceKey(pem: String(decoding: data, as: UTF8.self)) else {
            throw refused("holds no Ed25519 private key (PEM, PKCS#8); make one with: geolocate key init --force-new")
        }
        return key
    }

    /// Writes the key to `path`, 0600. Without `replacing`, an existing file is never touched.
    /// - Throws: `GeolocateError.missingSetting` (78) when a key is there and `replacing` is
    ///   false; `GeolocateError.stateNotWritable` when the file cannot be written.
    package func save(to path: String, replacing: Bool) throws {
        let data = Data(pem.utf8)
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty { try Paths.makeDirectories(directory) }
        if replacing {
            do { try AtomicFile.write(data, to: path, permissions: 0o600) } catch {
                throw GeolocateError.stateNotWritable(path: path, reason: ErrorText.plain(error))
            }
            return
        }
        // Written aside, then linked into place: `link` fails on an existing name, so two
        // `key init`s at once, or one after another, never replace a key.
        let temporary = path + ".\(getpid()).tmp"
        do { try AtomicFile.write(data, to: temporary, permissions: 0o600) } catch {
            throw GeolocateError.stateNotWritable(path: path, reason: ErrorText.plain(error))
        }
        defer { unlink(temporary) }
        guard link(temporary, path) == 0 else {
            if errno == EEXIST {
                throw GeolocateError.missingSetting("a device key already exists at \(path): geolocate key show prints it; "
                    + "geolocate key init --force-new replaces it (a cloned disk image), geolocate key rotate moves to a new one")
            }
            throw GeolocateError.stateNotWritable(path: path, reason: ErrorText.posix(errno))
        }
    }

    /// A new key that retires this one.
    package func rotated() -> DeviceKey {
        DeviceKey(privateKey: Curve25519.Signing.PrivateKey(), retired: [privateKey.publicKey] + retired)
    }

    // MARK: Public forms

    /// The signing key's RFC 7638 thumbprint, the `kid` of its tokens.
    package var keyID: String { DeviceKey.thumbprint(privateKey.publicKey) }

    /// The signing key, then the retired ones, as a JWK Set (RFC 7517 §5).
    package var jwkSet: String {
        var json = JSONWriter()
        json.beginObject()
        json.beginArray("keys")
        for key in [privateKey.publicKey] + retired { DeviceKey.writeJWK(key, to: &json) }
        json.endArray()
        json.endObject()
        return json.text
    }

    /// The signing key, then the retired ones, as PEM public keys (SubjectPublicKeyInfo).
    package var publicPEM: String {
        ([privateKey.publicKey] + retired).map { DeviceKey.pem("PUBLIC KEY", DeviceKey.spkiPrefix + $0.rawRepresentation) }.joined()
    }

    /// A public key as a JWK (RFC 8037): `crv`, `kid`, `kty`, `x`, in that order.
    package static func writeJWK(_ key: Curve25519.Signing.PublicKey, to json: inout JSONWriter) {
        json.beginObject()
        json.string("crv", "Ed25519")
        json.string("kid", thumbprint(key))
        json.string("kty", "OKP")
        json.string("x", Base64URL.encode(key.rawRepresentation))
        json.endObject()
    }

    /// RFC 7638: SHA-256 of the required members in lexicographic order with no spaces,
    /// base64url.
    package static func thumbprint(_ key: Curve25519.Signing.PublicKey) -> String {
        let members = #"{"crv":"Ed25519","kty":"OKP","x":"\#(Base64URL.encode(key.rawRepresentation))"}"#
        return Base64URL.encode(Data(SHA256.hash(data: Data(members.utf8))))
    }

    // MARK: PEM

    /// DER of PKCS#8 `PrivateKeyInfo` for Ed25519 (RFC 8410 §7) before the 32-byte seed.
    private static let pkcs8Prefix: [UInt8] = [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70,
                                               0x04, 0x22, 0x04, 0x20]
    /// DER of `SubjectPublicKeyInfo` for Ed25519 (RFC 8410 §4) before the 32-byte key.
    private static let spkiPrefix: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]

    private var pem: String {
        DeviceKey.pem("PRIVATE KEY", DeviceKey.pkcs8Prefix + privateKey.rawRepresentation)
            + retired.map { DeviceKey.pem("PUBLIC KEY", DeviceKey.spkiPrefix + $0.rawRepresentation) }.joined()
    }

    private init?(pem text: String) {
        var privateKey: Curve25519.Signing.PrivateKey?
        var retired: [Curve25519.Signing.PublicKey] = []
        for (label, der) in DeviceKey.pemBlocks(text) {
            if label == "PRIVATE KEY", privateKey == nil, der.count == 48, Array(der.prefix(16)) == DeviceKey.pkcs8Prefix {
                privateKey = try? Curve25519.Signing.PrivateKey(rawRepresentation: der.suffix(32))
            } else if label == "PUBLIC KEY", der.count == 44, Array(der.prefix(12)) == DeviceKey.spkiPrefix,
                      let key = try? Curve25519.Signing.PublicKey(rawRepresentation: der.suffix(32)) {
                retired.append(key)
            }
        }
        guard let privateKey else { return nil }
        self.init(privateKey: privateKey, retired: retired)
    }

    private static func pem(_ label: String, _ der: [UInt8]) -> String {
        let base64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN \(label)-----\n\(base64)\n-----END \(label)-----\n"
    }

    private static func pemBlocks(_ text: String) -> [(String, [UInt8])] {
        var blocks: [(String, [UInt8])] = []
        var label: String?
        var body = ""
        for line in text.split(whereSeparator: \.isNewline).map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line.hasPrefix("-----BEGIN "), line.hasSuffix("-----") {
                label = String(line.dropFirst(11).dropLast(5))
                body = ""
            } else if line.hasPrefix("-----END "), let open = label {
                if let der = Data(base64Encoded: body) { blocks.append((open, Array(der))) }
                label = nil
            } else if label != nil {
                body += line
            }
        }
        return blocks
    }
}

/// Base64url without padding (RFC 7515 §2), the encoding of every part of a JWS.
package enum Base64URL {
    package static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}
