import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A scripted gpsd on a free loopback port (`fake-gpsd.py`), for what a real gpsd cannot be
/// made to report: out-of-range or future-dated TPVs, or silence after accepting a client.
///
/// Call `stop()` in every outcome (`defer`): it ends the script by its process group.
final class ScriptedGPSD {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fake-gpsd-\(UUID().uuidString)")
    private(set) var port = 0
    private var pid: pid_t = 0
    var source: String { "gpsd://127.0.0.1:\(port)" }

    /// Starts the fake with `script` (see fake-gpsd.py: `greeting`, `silent`, `poll`, `stream`,
    /// `interval`, `driver`, `rawFlood`) and waits until it listens; with `user` (root only), run as that user, as
    /// any local user could while gpsd is down.
    init(_ script: [String: Any], user: String? = nil) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let scriptPath = directory.appendingPathComponent("script.json").path
        try JSONSerialization.data(withJSONObject: script).write(to: URL(fileURLWithPath: scriptPath))
        let portFile = directory.appendingPathComponent("port").path
        var program = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("fake-gpsd.py").path
        var command = ["python3"]
        if let user {
            // The checkout may be private to root: the user runs a copy, in a directory it may write.
            let copy = directory.appendingPathComponent("fake-gpsd.py").path
            try FileManager.default.copyItem(atPath: program, toPath: copy)
            program = copy
            chmod(directory.path, 0o777)
            chmod(scriptPath, 0o644)
            command = ["setpriv", "--reuid=\(user)", "--regid=\(user == "nobody" ? "nogroup" : user)", "--clear-groups", "/usr/bin/python3"]
        }
        pid = try ProcessGroup.spawn(command + [program, scriptPath, directory.appendingPathComponent("commands.jsonl").path, portFile],
                                     outputPath: directory.appendingPathComponent("output").path)
        guard waitUntil(.seconds(10), { FileManager.default.fileExists(atPath: portFile) }),
              let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text) else {
            let output = (try? String(contentsOf: directory.appendingPathComponent("output"), encoding: .utf8)) ?? ""
            stop()
            throw GPSDFakeError(message: "the scripted gpsd did not start: \(output)")
        }
        self.port = port
    }

    /// What the server logged (`commands.jsonl`): connections, closes and commands, in order.
    private var events: [[String: Any]] {
        guard let text = try? String(contentsOf: directory.appendingPathComponent("commands.jsonl"), encoding: .utf8) else { return [] }
        return text.split(whereSeparator: \.isNewline).compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Seconds from the first client's connection to its close, as the server saw them: how
    /// long geolocate waited on gpsd, whatever its own start-up took on a loaded machine.
    var firstSessionSeconds: Double? {
        let events = self.events
        guard let connected = events.first(where: { $0["event"] as? String == "connected" })?["time"] as? Double,
              let closed = events.first(where: { $0["event"] as? String == "closed" })?["time"] as? Double else { return nil }
        return closed - connected
    }

    /// Seconds from the first client's connection to the last close: how long geolocate held
    /// every connection it opened (the JSON watch and the raw one).
    var allSessionsSeconds: Double? {
        let events = self.events
        guard let connected = events.first(where: { $0["event"] as? String == "connected" })?["time"] as? Double,
              let closed = events.last(where: { $0["event"] as? String == "closed" })?["time"] as? Double else { return nil }
        return closed - connected
    }

    /// The bytes each raw-watch flood sent before its connection ended (`rawFlood`).
    var floodedBytes: [Int] {
        events.filter { $0["event"] as? String == "flood" }.compactMap { $0["bytes"] as? Int }
    }

    /// When each client connected, in seconds of the server's monotonic clock.
    var connectionTimes: [Double] {
        events.filter { $0["event"] as? String == "connected" }.compactMap { $0["time"] as? Double }
    }

    /// The commands clients sent, in order (`?WATCH={...}`, `?POLL`).
    var commands: [String] { events.compactMap { $0["command"] as? String } }

    /// Ends fake-gpsd.py and removes its directory; calling it again does nothing.
    func stop() {
        if pid > 0 { ProcessGroup.stop(pid) }
        pid = 0
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }

    /// A TPV with a 3D fix at `time` (ISO 8601), with gpsd's usual fields; `overrides` replace or add fields.
    static func tpv(time: String, _ overrides: [String: Any] = [:]) -> [String: Any] {
        var report: [String: Any] = [
            "mode": 3, "time": time, "ept": 0.005, "lat": 53.3613367, "lon": -6.50562, "altHAE": 116.9,
            "altMSL": 62.1, "epx": 9.1, "epy": 11.4, "epv": 21.3, "track": 45.5, "speed": 1.25, "climb": 0.0,
            "eps": 22.8, "eph": 19.6, "sep": 26.2,
        ]
        for (key, value) in overrides { report[key] = value }
        return report
    }
}
