import Foundation

/// A private CA and certificates made with openssl at test time, in a directory of their own
/// (no key is ever committed): what an administrator's PKI gives a device and its servers.
///
/// - `ca.crt`: the CA; `server.crt`/`.key`: signed by it for IP 127.0.0.1;
///   `elsewhere.crt`/`.key`: signed by it for another host only; `client.crt`/`.key`: a
///   client certificate it signed.
/// - `other-ca.crt`: an unrelated CA; `stranger.crt`/`.key`: a client certificate it signed.
final class TestCertificates {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("geolocate-pki-\(UUID().uuidString)")

    init() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            try makeCA("ca")
            try makeCA("other-ca")
            try makeLeaf("server", signedBy: "ca", extensions: "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
            try makeLeaf("elsewhere", signedBy: "ca", extensions: "subjectAltName=DNS:elsewhere.invalid\nextendedKeyUsage=serverAuth\n")
            try makeLeaf("client", signedBy: "ca", extensions: "extendedKeyUsage=clientAuth\n")
            try makeLeaf("stranger", signedBy: "other-ca", extensions: "extendedKeyUsage=clientAuth\n")
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The collector's TLS files: the server certificate `name`, and the CA a client
    /// certificate must come from when one is required.
    func server(_ name: String = "server", requiringClientsOf clientCA: String? = nil) -> Collector.TLS {
        Collector.TLS(certificate: path("\(name).crt"), key: path("\(name).key"), clientCA: clientCA.map { path("\($0).crt") })
    }

    /// Elliptic-curve keys: made in milliseconds, where RSA takes a good part of a second.
    private static let newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    private func makeCA(_ name: String) throws {
        try Tool.run(["openssl", "req", "-x509"] + TestCertificates.newKey + ["-days", "2", "-subj", "/CN=geolocate test \(name)",
                      "-keyout", path("\(name).key"), "-out", path("\(name).crt")])
    }

    private func makeLeaf(_ name: String, signedBy ca: String, extensions: String) throws {
        try extensions.write(toFile: path("\(name).ext"), atomically: true, encoding: .utf8)
        try Tool.run(["openssl", "req"] + TestCertificates.newKey + ["-subj", "/CN=geolocate-\(name)",
                      "-keyout", path("\(name).key"), "-out", path("\(name).csr")])
        try Tool.run(["openssl", "x509", "-req", "-in", path("\(name).csr"), "-CA", path("\(ca).crt"), "-CAkey", path("\(ca).key"),
                      "-CAcreateserial", "-days", "2", "-out", path("\(name).crt"), "-extfile", path("\(name).ext")])
    }
}
