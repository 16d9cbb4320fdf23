import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An MQTT 5 and 3.1.1 broker on 127.0.0.1 (`fake-mqtt.py`) that acknowledges only what a test
/// plans, one plan word per connection (`ack`, `ack:K`, `window:N`, `v3only`, `close-v5`,
/// `down`), and logs every CONNECT and PUBLISH it received.
final class FakeMQTTBroker {
    /// A PUBLISH received: on which connection (from 1), the record id in its payload, and
    /// whether the broker's acknowledgement was written to the socket.
    struct Publish {
        var connection: Int
        var id: String
        var acknowledged: Bool
        /// 4 for MQTT 3.1.1, 5 for MQTT 5.
        var version = 4
        /// MQTT 5: the user property `id`, and the Message Expiry Interval.
        var property: String?
        var expiry: Int?
        /// How many PUBLISHes of its connection were unacknowledged with it (`window:N`).
        var unacknowledged = 0
        /// Its DUP flag: a message sent again.
        var dup = false
        /// Whether a broker that delivers a QoS 2 message on receipt would deliver it now: a
        /// packet id its session did not hold (QoS 0 and 1: always).
        var delivered = true
    }

    /// A CONNECT received.
    struct Connect {
        var version: Int
        var client: String
        var cleanStart: Bool
        /// Its Session Expiry Interval, `nil` when it sent none.
        var sessionExpiry: Int?
        /// Whether the CONNACK said the session was resumed.
        var present: Bool
    }

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fake-mqtt-\(UUID().uuidString)")
    private(set) var port = 0
    private var pid: pid_t = 0
    private var logPath: String { directory.appendingPathComponent("publishes.jsonl").path }

    init(plan: [String]) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let portFile = directory.appendingPathComponent("port").path
        let program = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("fake-mqtt.py").path
        pid = try ProcessGroup.spawn(["python3", program, portFile, logPath] + plan, outputPath: directory.appendingPathComponent("output").path)
        guard waitUntil(.seconds(10), { FileManager.default.fileExists(atPath: portFile) }),
              let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) else {
            stop()
            throw GPSDFakeError(message: "fake-mqtt.py did not start")
        }
        self.port = port
    }

    /// Every PUBLISH received so far, in order.
    func publishes() -> [Publish] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(whereSeparator: \.isNewline).compactMap {
            guard let entry = try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any],
                  let connection = entry["connection"] as? Int, let id = entry["id"] as? String else { return nil }
            return Publish(connection: connection, id: id, acknowledged: entry["acked"] as? Bool ?? false,
                           version: entry["version"] as? Int ?? 4, property: entry["property"] as? String, expiry: entry["expiry"] as? Int,
                           unacknowledged: entry["unacknowledged"] as? Int ?? 0, dup: entry["dup"] as? Bool ?? false,
                           delivered: entry["delivered"] as? Bool ?? true)
        }
    }

    /// The protocol version of each CONNECT received, in order.
    func connects() -> [Int] { connections().map(\.version) }

    /// Each CONNECT received, in order.
    func connections() -> [Connect] {
        entries().compactMap { entry in
            guard entry["connect"] != nil, let version = entry["version"] as? Int, let client = entry["client"] as? String else { return nil }
            return Connect(version: version, client: client, cleanStart: entry["cleanStart"] as? Bool ?? true,
                           sessionExpiry: entry["sessionExpiry"] as? Int, present: entry["present"] as? Bool ?? false)
        }
    }

    /// The Session Expiry Interval each DISCONNECT received set, in order (`nil`: none).
    func disconnects() -> [Int?] {
        entries().compactMap { entry in entry["disconnect"] != nil ? .some(entry["sessionExpiry"] as? Int) : nil }
    }

    private func entries() -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(whereSeparator: \.isNewline).compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Ends fake-mqtt.py and removes its directory; calling it again does nothing.
    func stop() {
        if pid > 0 { ProcessGroup.stop(pid) }
        pid = 0
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
