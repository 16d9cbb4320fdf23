import Foundation
import Testing

/// `spoofingSuspected` and `jumped` against logs whose truth is known independently:
/// `nmea-gen.py`'s honest but noisy drives, and
/// the same drives spoofed by `Support/spoof-nmea.py` (equal signal strengths and an 800 km
/// jump from a known epoch on). The real receivers of the gpsd corpus run in process
/// (SpoofingReplayTests).
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct SpoofingEndToEndTests {
    let geolocate = GeolocateProcess()
    static let corpus = GeolocateProcess.projectRoot.deletingLastPathComponent().appendingPathComponent("shared/corpus/gpsd")
    static let tools = GeolocateProcess.projectRoot.deletingLastPathComponent().appendingPathComponent("shared/tools")

    func track(_ log: String) throws -> [[String: Any]] {
        let result = try geolocate.run(["track", "--replay", log, "--permission", "fine", "--every-fix", "--stdout", "--no-spool"])
        #expect(result.status == 0, "\(log): \(result.stderr)")
        return result.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    static func signals(_ record: [String: Any]) -> [String: Any] { record["signals"] as? [String: Any] ?? [:] }

    static func timeOfDay(_ record: [String: Any]) -> Int64? {
        ((record["location"] as? [String: Any])?["recordTimestamp"] as? Int).map { Int64($0) % 86_400_000 }
    }

    /// "hhmmss.ss" as milliseconds of the day.
    static func timeOfDay(_ text: String) -> Int64 {
        let digits = Array(text)
        let hours = Int64(String(digits[0..<2]))!, minutes = Int64(String(digits[2..<4]))!
        let seconds = Double(String(digits[4...]))!
        return (hours * 3600 + minutes * 60) * 1000 + Int64((seconds * 1000).rounded())
    }

    static func run(_ arguments: [String]) throws {
        let outcome = try Spawn.run(arguments)
        #expect(outcome.status == 0, "\(arguments): \(String(decoding: outcome.stderr, as: UTF8.self))")
    }

    func generate(_ arguments: [String]) throws -> String {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let log = geolocate.home.appendingPathComponent("generated-\(UUID().uuidString).nmea").path
        try Self.run(["python3", Self.tools.appendingPathComponent("nmea-gen.py").path, "--quiet", "--out", log] + arguments)
        return log
    }

    static let logs: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: corpus.path)) ?? [])
        .filter { $0.hasSuffix(".log") }.sorted()

    @Test(arguments: ["GP", "GN"]) func honestNoisyDrivesNeitherJumpNorLookSpoofed(_ talker: String) throws {
        let log = try generate(["--epochs", "900", "--seed", "11", "--talker", talker, "--bad-fraction", "0.05"])
        let records = try track(log)
        #expect(records.count > 800)
        for record in records {
            let signals = Self.signals(record)
            #expect(signals["jumped"] as? Bool == false, "\(signals)")
            #expect(signals["spoofingSuspected"] as? Bool == false, "\(signals)")
        }
    }

    /// A drive spoofed from epoch 150 on by `Support/spoof-nmea.py` with `options`, and the time
    /// of day of its first spoofed epoch, from the tool's truth file.
    func spoofedDrive(_ talker: String, _ options: [String] = []) throws -> (log: String, start: Int64) {
        let honest = try generate(["--epochs", "300", "--seed", "5", "--talker", talker])
        let spoofed = honest + ".spoofed"
        let truth = honest + ".truth"
        try Self.run(["python3", GeolocateProcess.projectRoot.appendingPathComponent("Tests/GeolocateIntegrationTests/Support/spoof-nmea.py").path,
                      "--in", honest, "--out", spoofed, "--from-epoch", "150", "--truth", truth] + options)
        var spoofedFrom: Int64?
        for line in try String(contentsOfFile: truth, encoding: .utf8).split(separator: "\n") {
            let epoch = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            if epoch["spoofed"] as? Bool == true, spoofedFrom == nil { spoofedFrom = Self.timeOfDay(try #require(epoch["time"] as? String)) }
        }
        return (spoofed, try #require(spoofedFrom))
    }

    /// The spoofer moves the position 800 km and leaves the signal strengths alone: only the
    /// jump under the same satellites gives it away, from the jump on and never before (every
    /// spoofed fix is compared with the last honest one, SPEC §10.1).
    @Test(arguments: ["GP", "GN"]) func aJumpUnderTheSameSatellitesLooksSpoofed(_ talker: String) throws {
        let (spoofed, start) = try spoofedDrive(talker, ["--snr", "0"])
        let records = try track(spoofed)
        #expect(records.count == 300)
        let suspected = records.filter { Self.signals($0)["spoofingSuspected"] as? Bool == true }
        let times = suspected.compactMap(Self.timeOfDay)
        #expect(times.first == start && times.allSatisfy { $0 >= start }, "\(times)")
        let reasons = suspected.first.flatMap { Self.signals($0)["reasons"] as? [String] } ?? []
        #expect(reasons.contains { $0.hasPrefix("spoofingSuspected: the position jumped while the same ") }, "\(reasons)")
    }

    /// The spoofer holds the receiver 800 km off from epoch 150 on: every spoofed fix is a
    /// jump from the last honest one (800 km in the drive's last 150 s needs far more than
    /// 300 m/s), never a new "previous" (SPEC §10.1), and looks spoofed.
    @Test(arguments: ["GP", "GN"]) func aSpoofedDriveJumpsFromThenOnAndLooksSpoofed(_ talker: String) throws {
        let (spoofed, start) = try spoofedDrive(talker)
        let records = try track(spoofed)
        #expect(records.count == 300)
        let jumps = records.filter { Self.signals($0)["jumped"] as? Bool == true }.compactMap(Self.timeOfDay)
        let spoofedTimes = records.compactMap(Self.timeOfDay).filter { $0 >= start }
        #expect(jumps == spoofedTimes && jumps.first == start, "\(jumps.count) jumps of \(spoofedTimes.count) spoofed fixes")
        for record in records {
            let time = try #require(Self.timeOfDay(record))
            #expect(Self.signals(record)["spoofingSuspected"] as? Bool == (time >= start), "at \(time): \(Self.signals(record))")
        }
    }
}
