import Foundation
import Testing

/// SPEC §3 and §15: a receiver read straight from a terminal (`/dev/ttyUSB0` without gpsd) is
/// live input. Its fixes are dated by their arrival on the system clock, its records are not
/// `replayed`, it is remembered with gpsd's fixes, and a token says `src` `tty`. The receiver
/// is `pty-nmea.py` writing an `nmea-gen.py` drive to a pseudo-terminal; positions come from
/// the generator's truth file.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct TerminalReceiverEndToEndTests {
    let geolocate = GeolocateProcess()
    static let tools = GeolocateProcess.projectRoot.deletingLastPathComponent().appendingPathComponent("shared/tools")

    /// A 60-epoch drive (2024-03-01) and its truth by time, in ms since 1970.
    func drive() throws -> (log: String, truth: [Int64: (latitude: Double, longitude: Double)]) {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let log = geolocate.home.appendingPathComponent("drive.nmea").path
        let truthPath = log + ".truth"
        let made = try Spawn.run(["python3", Self.tools.appendingPathComponent("nmea-gen.py").path, "--epochs", "60", "--seed", "7",
                                  "--quiet", "--out", log, "--truth", truthPath])
        #expect(made.status == 0)
        var truth: [Int64: (Double, Double)] = [:]
        for line in try String(contentsOfFile: truthPath, encoding: .utf8).split(separator: "\n") {
            let epoch = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let time = try #require(epoch["time"] as? String)
            let seconds = try #require(ISO8601DateFormatter().date(from: String(time.prefix(19)) + "Z")).timeIntervalSince1970
            truth[Int64(seconds * 1000)] = (try #require(epoch["lat"] as? Double), try #require(epoch["lon"] as? Double))
        }
        return (log, truth)
    }

    @Test func aReceiverOnATerminalIsLiveInput() throws {
        let (log, truth) = try drive()
        let receiver = try TerminalReceiver(log: log)
        defer { receiver.stop() }
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let result = try geolocate.run(["trigger", "login", "--source", "nmea:" + receiver.path, "--permission", "fine",
                                        "--mode", "force-current", "--timeout", "5s"])
        let after = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(result.status == 0, "\(result.stderr)")
        let record = try result.json()
        #expect(record["locationSource"] as? String == "current", "\(record)")
        // The record is made now, on the system clock, not at the log's 2024 time.
        let triggeredAt = Int64(try #require(record["triggeredAt"] as? Int))
        #expect(triggeredAt >= before && triggeredAt <= after, "\(triggeredAt) not in \(before)...\(after)")
        let location = try #require(record["location"] as? [String: Any], "\(record)")
        let time = Int64(try #require(location["recordTimestamp"] as? Int))
        let expected = try #require(truth[time], "a fix at \(time), which the drive does not have")
        #expect(abs(Double(try #require(location["latitude"] as? String))! - expected.latitude) < 1e-6)
        #expect(abs(Double(try #require(location["longitude"] as? String))! - expected.longitude) < 1e-6)
        let signals = try #require(record["signals"] as? [String: Any])
        #expect(signals["replayed"] as? Bool == false, "\(signals)")
        // The skew is the system clock at arrival minus the fix's time: between the two readings.
        let skew = Int64(try #require(signals["clockSkewMs"] as? Int, "\(signals)"))
        #expect(skew >= before - time && skew <= after - time, "\(skew)")
        #expect(result.stderr.contains("dates its fixes 2024-03-01"), "one line says the receiver's clock is far off: \(result.stderr)")
        // Remembered with gpsd's fixes, never with replays'.
        #expect(FileManager.default.fileExists(atPath: geolocate.stateDirectory + "/last-known.json"))
        #expect(!FileManager.default.fileExists(atPath: geolocate.stateDirectory + "/last-known-replay.json"))

        // A token says where the fix came from.
        #expect(try geolocate.run(["key", "init"]).status == 0)
        let signed = try geolocate.run(["trigger", "login", "--source", "nmea:" + receiver.path, "--permission", "fine",
                                        "--mode", "force-current", "--timeout", "5s", "--format", "jwt", "--audience", "https://risk.example"])
        #expect(signed.status == 0, "\(signed.stderr)")
        let payload = try #require(signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".").dropFirst().first)
        let bytes = try #require(Data(base64URL: String(payload)))
        let claims = try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
        #expect(claims["src"] as? String == "tty", "\(claims)")
        #expect((claims["arrivedAt"] as? Int).map { Int64($0) >= before } == true, "\(claims)")
    }

    /// A receiver that hangs up (unplugged) is a source gone, as gpsd gone is: the record falls
    /// back to the live last known fix, `unavailable`, with a line on stderr; never "not an
    /// NMEA log" and no record (found by the hostile pass).
    @Test func aReceiverThatHangsUpIsUnavailable() throws {
        let (log, _) = try drive()
        let receiver = try TerminalReceiver(log: log)
        let first = try geolocate.run(["trigger", "login", "--source", "nmea:" + receiver.path, "--permission", "fine",
                                       "--mode", "force-current", "--timeout", "5s"])
        receiver.stop()
        let firstRecord = try first.json()
        #expect(first.status == 0 && firstRecord["locationSource"] as? String == "current", "\(first.stderr)")
        let unplugged = try TerminalReceiver(log: log, hangUpAfter: 3)
        defer { unplugged.stop() }
        let result = try geolocate.run(["trigger", "login", "--source", "nmea:" + unplugged.path, "--permission", "fine",
                                        "--mode", "force-current", "--timeout", "20s"])
        #expect(result.status == 0, "\(result.stderr)")
        let record = try result.json()
        #expect(record["locationSource"] as? String == "last_known" && record["fallbackReason"] as? String == "unavailable", "\(record)")
        #expect(result.stderr.contains(unplugged.path), "\(result.stderr)")
    }

    /// The same drive from a file is a replay, on the log's clock: the control.
    @Test func theSameDriveFromAFileIsAReplay() throws {
        let (log, _) = try drive()
        let result = try geolocate.run(["trigger", "login", "--replay", log, "--permission", "fine", "--mode", "force-current", "--timeout", "5s"])
        #expect(result.status == 0, "\(result.stderr)")
        let record = try result.json()
        #expect((record["signals"] as? [String: Any])?["replayed"] as? Bool == true)
        #expect((record["triggeredAt"] as? Int).map { $0 < 1_800_000_000_000 && $0 >= 1_709_294_400_000 } == true, "the log's 2024 time: \(record)")
        #expect(FileManager.default.fileExists(atPath: geolocate.stateDirectory + "/last-known-replay.json"))
    }
}
