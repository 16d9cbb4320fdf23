import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real HTTP collector on 127.0.0.1 (`collector.py`) whose answers a test scripts per path:
/// statuses, delays, `Retry-After`, dropped connections, poison records; it also answers
/// `/reverse` as a Nominatim server does. Given TLS files it speaks HTTPS.
final class Collector {
    /// HTTPS: the server's certificate and key (PEM), and the CA a client certificate must be
    /// signed by when one is required.
    struct TLS {
        var certificate: String
        var key: String
        var clientCA: String?
    }

    struct Request {
        /// The method and the request-target as sent (`GET /osmand?id=…&lat=…`).
        var method: String
        var target: String
        var path: String
        var status: Int?
        var closed: Bool
        var key: String?
        var contentType: String?
        var ids: [String]
        var headers: [String: String]
        /// A GET's query parameters.
        var query: [String: String]
        var body: String
        /// Whether the answer's status line and headers were written to the socket.
        var sent: Bool
    }

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("collector-\(UUID().uuidString)")
    private(set) var port = 0
    private var pid: pid_t = 0
    private let scheme: String
    private var rulesPath: String { directory.appendingPathComponent("rules.json").path }
    private var logPath: String { directory.appendingPathComponent("requests.jsonl").path }

    init(tls: TLS? = nil) throws {
        scheme = tls == nil ? "http" : "https"
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try script([:])
        let portFile = directory.appendingPathComponent("port").path
        let program = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("collector.py").path
        var arguments = ["python3", program, rulesPath, logPath, portFile]
        if let tls {
            arguments += ["--tls-cert", tls.certificate, "--tls-key", tls.key] + (tls.clientCA.map { ["--tls-client-ca", $0] } ?? [])
        }
        pid = try ProcessGroup.spawn(arguments, outputPath: directory.appendingPathComponent("output").path)
        guard waitUntil(.seconds(10), { FileManager.default.fileExists(atPath: portFile) }),
              let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) else {
            stop()
            throw GPSDFakeError(message: "the collector did not start")
        }
        self.port = port
    }

    func url(_ path: String) -> String { "\(scheme)://127.0.0.1:\(port)\(path)" }

    /// Sets the answers per path (see collector.py); takes effect from the next request.
    func script(_ rules: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: rules)
        try data.write(to: URL(fileURLWithPath: rulesPath + ".tmp"))
        rename(rulesPath + ".tmp", rulesPath)
    }

    /// Every request received so far, in order.
    func requests(_ path: String? = nil) -> [Request] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        let entries = text.split(whereSeparator: \.isNewline).compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let sent = Set(entries.filter { $0["sent"] as? Bool == true }.compactMap { $0["n"] as? Int })
        return entries.compactMap { entry -> Request? in
            guard let requestPath = entry["path"] as? String, path == nil || path == requestPath else { return nil }
            return Request(method: entry["method"] as? String ?? "", target: entry["target"] as? String ?? "",
                           path: requestPath, status: entry["status"] as? Int, closed: entry["close"] as? Bool ?? false,
                           key: entry["key"] as? String, contentType: entry["type"] as? String,
                           ids: (entry["ids"] as? [Any] ?? []).compactMap { $0 as? String },
                           headers: entry["headers"] as? [String: String] ?? [:],
                           query: entry["query"] as? [String: String] ?? [:], body: entry["body"] as? String ?? "",
                           sent: (entry["n"] as? Int).map(sent.contains) ?? false)
        }
    }

    /// Why each TLS handshake the collector refused failed, in OpenSSL's words
    /// ("peer did not return a certificate").
    func handshakeFailures() -> [String] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(whereSeparator: \.isNewline).compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["reason"] as? String
        }
    }

    /// The ids the collector accepted on `path`: answered 2xx, and that answer really sent.
    func acceptedIDs(_ path: String) -> [String] {
        requests(path).filter { $0.sent && (200..<300).contains($0.status ?? 0) }.flatMap(\.ids)
    }

    /// Ends collector.py and removes its directory; calling it again does nothing.
    func stop() {
        if pid > 0 { ProcessGroup.stop(pid) }
        pid = 0
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
