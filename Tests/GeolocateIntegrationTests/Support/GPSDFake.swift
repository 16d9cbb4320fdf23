import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A private gpsd fed by `gpsfake` from an NMEA log, looping, on a loopback port the kernel
/// picked.
///
/// The one server whose port is not held for it (`Loopback.Reservation`) until it listens:
/// with the port held while gpsd started (SO_REUSEADDR, as the broker's is), geolocate's
/// satellites matched no SKY gpspipe printed (3 used where gpspipe saw 12) in every run of
/// SignalsGPSDTests. The race behind it is understood: gpsd answers `?POLL;` with the
/// skyview it is still filling, one GSV sentence (four satellites) at a time, so a fix can
/// carry the first 4 or 8 satellites of the SKY gpspipe prints next; geolocate now drops a
/// view of fewer than 4 used satellites (asking again) and SignalsGPSDTests accepts the views
/// on the way to a SKY (`summaries(ofViewsFilling:)`). The hold only changed how often the
/// trigger met a view half filled. A free port is still picked and released just before
/// gpsfake starts, a window in which another process could take it.
///
/// Call `stop()` in every outcome (`defer`): it ends gpsfake and its gpsd by process group
/// and removes the control socket gpsfake leaves in /tmp.
final class GPSDFake {
    let port: Int
    let pid: pid_t
    let outputPath: String
    var source: String { "gpsd://127.0.0.1:\(port)" }

    /// Starts gpsfake on `log` with `cycle` seconds between sentences and waits until gpsd listens;
    /// with `port`, on the port of a fake stopped before (not reserved meanwhile).
    init(log: String, cycle: Double = 0.05, port: Int? = nil) throws {
        if let port {
            self.port = port
        } else {
            let reservation = try Loopback.Reservation()
            self.port = reservation.port
            reservation.release()
        }
        outputPath = NSTemporaryDirectory() + "gpsfake-\(UUID().uuidString).out"
        let path = log.hasPrefix("/") ? log : GeolocateProcess.projectRoot.appendingPathComponent(log).path
        pid = try ProcessGroup.spawn(["gpsfake", "-c", "\(cycle)", "-q", "-P", "\(self.port)", path],
                                     outputPath: outputPath)
        let port = self.port
        guard waitUntil(.seconds(20), { Loopback.isListening(port) }) else {
            stop()
            throw GPSDFakeError(message: "gpsd from gpsfake did not listen on port \(port) within 20 s: \(output)")
        }
    }

    /// What gpsfake and gpsd printed.
    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    private var stopped = false

    deinit { stop() }

    /// Ends gpsfake and gpsd; calling it again does nothing.
    func stop() {
        guard !stopped else { return }
        stopped = true
        ProcessGroup.stop(pid)
        unlink("/tmp/gpsfake-\(pid).sock")
        unlink(outputPath)
    }
}

struct GPSDFakeError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// `gpspipe -w` attached to a gpsd, recording the reports it prints: the reference client
/// that geolocate's fixes are compared with.
final class GPSPipe {
    let pid: pid_t
    let outputPath: String

    init(port: Int) throws {
        outputPath = NSTemporaryDirectory() + "gpspipe-\(UUID().uuidString).jsonl"
        pid = try ProcessGroup.spawn(["gpspipe", "-w", "127.0.0.1:\(port)"], outputPath: outputPath)
    }

    /// The TPV reports printed so far, as parsed JSON objects.
    func positionReports() -> [[String: Any]] { reports(ofClass: "TPV") }

    /// The reports of `reportClass` (TPV, SKY, …) printed so far, as parsed JSON objects.
    func reports(ofClass reportClass: String) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: outputPath, encoding: .utf8) else { return [] }
        return text.split(whereSeparator: \.isNewline).compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["class"] as? String == reportClass else { return nil }
            return object
        }
    }

    /// Waits until a TPV matching `predicate` has been printed and returns it.
    func waitForPositionReport(within limit: Duration = .seconds(20),
                               where predicate: ([String: Any]) -> Bool = GPSPipe.hasFix) throws -> [String: Any] {
        var found: [String: Any]?
        _ = waitUntil(limit) {
            found = positionReports().last(where: predicate)
            return found != nil
        }
        guard let found else {
            let printed = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "nothing"
            throw GPSDFakeError(message: "gpspipe printed no matching TPV within \(limit); it printed: \(printed.suffix(2000))")
        }
        return found
    }

    /// Waits until gpsd has reported fixes for three different times and returns the latest.
    ///
    /// In the first epoch after gpsd opens a device it may send a partial TPV (2D, no error
    /// estimates) before the complete one; from the third on it sends one TPV per epoch.
    func waitForSteadyFixes(within limit: Duration = .seconds(20)) throws -> [String: Any] {
        try waitForPositionReport(within: limit) { report in
            GPSPipe.hasFix(report) && Set(positionReports().filter(GPSPipe.hasFix).compactMap(GPSPipe.milliseconds)).count >= 3
        }
    }

    private var stopped = false

    /// Ends gpspipe; calling it again does nothing.
    func stop() {
        guard !stopped else { return }
        stopped = true
        ProcessGroup.stop(pid)
        unlink(outputPath)
    }

    deinit { stop() }

    /// A TPV with a 2D or 3D fix.
    static func hasFix(_ report: [String: Any]) -> Bool {
        (report["mode"] as? Int ?? 0) >= 2 && report["time"] != nil
    }

    /// A TPV's `time` in epoch milliseconds.
    static func milliseconds(_ report: [String: Any]) -> Int64? {
        guard let text = report["time"] as? String else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text).map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }
}

/// Runs `body` with a gpsd looping the 1 Hz fix log, `gpspipe -w` attached to it, and the
/// latest TPV gpspipe printed once gpsd reports steady fixes; stops both in every outcome.
func withSteadyGPSD(_ body: (GPSDFake, GPSPipe, [String: Any]) throws -> Void) throws {
    let fake = try GPSDFake(log: GeolocateProcess.fixture("gpsd-fixes.nmea"))
    defer { fake.stop() }
    let pipe = try GPSPipe(port: fake.port)
    defer { pipe.stop() }
    try body(fake, pipe, try pipe.waitForSteadyFixes())
}
