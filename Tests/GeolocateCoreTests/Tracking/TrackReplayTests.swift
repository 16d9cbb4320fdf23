import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import TestSupport
import Testing

/// `track` on replays in this process, through `Tracker.command` (moved from TrackEndToEndTests,
/// TrackFormatEndToEndTests, JumpStandsEndToEndTests and DeviceContextEndToEndTests, which keep
/// signals, stdin, gpsd, concurrent processes and the fake system's commands): stdout and the
/// spool carry the same records, a state directory that cannot be made, each line in each
/// format, input without a newline read past, and a device with nothing to tell.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct TrackReplayTests {
    let geolocate = InProcessTrigger()
    let drive = InProcessTrigger.example("maynooth-drive.nmea")
    var root: URL { geolocate.home.appendingPathComponent("device-root") }

    func ids(_ lines: [String]) -> [String] {
        lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["id"] as? String }
    }

    func spooledIDs() throws -> [String] {
        ids(try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).mosaicLines())
    }

    func formatted(_ extra: [String]) async throws -> [String] {
        let result = await geolocate.run(["track", "--replay", drive, "--every-fix", "--stdout", "--permission", "fine", "--count", "3"] + extra)
        try #require(result.status == 0, "\(result.stderr)")
        return result.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    @Test func stdoutAndSpoolCarryTheSameRecords() async throws {
        let result = await geolocate.run(["track", "--replay", drive, "--every-fix", "--stdout", "--permission", "fine"])
        #expect(result.status == 0, "\(result.stderr)")
        let printed = ids(result.stdout.split(separator: "\n").map(String.init))
        #expect(printed.count == 120)
        #expect(try spooledIDs() == printed)
        #expect(result.stderr.isEmpty)
    }

    /// A state directory that cannot be made (a file stands in its place): track exits 73, the
    /// error names the path; trigger still prints its record and warns (its exit 0 means "a
    /// record was produced").
    @Test func anUnwritableStateDirectoryIs73ForTrack() async throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: geolocate.stateDirectory, contents: Data("not a directory".utf8)))
        let track = await geolocate.run(["track", "--replay", drive, "--permission", "fine"])
        #expect(track.status == 73)
        #expect(track.stderr.contains(geolocate.stateDirectory) && track.stderr.split(separator: "\n").count == 1, "\(track.stderr)")
        #expect(track.stdout.isEmpty)
        let trigger = await geolocate.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--timeout", "10s"])
        #expect(trigger.status == 0)
        #expect((try trigger.json()["location"] as? [String: Any])?["latitude"] as? String == "53.3613367")
        #expect(trigger.stderr.contains("cannot write state file"))
    }

    /// `--stdout --no-spool` needs no state: a state directory that cannot be made is a warning.
    @Test func noSpoolRunsWithoutAWritableStateDirectory() async throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: geolocate.stateDirectory, contents: Data("not a directory".utf8)))
        let result = await geolocate.run(["track", "--replay", drive, "--every-fix", "--stdout", "--no-spool", "--permission", "fine"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(ids(result.stdout.split(separator: "\n").map(String.init)).count == 120)
        #expect(result.stderr.contains("warning"), "\(result.stderr)")
    }
    @Test(arguments: ["veridium", "openlocate", "owntracks", "osmand"])
    func eachLineIsTheRecordInTheFormat(_ format: String) async throws {
        let mosaic = try await formatted(["--no-spool"]).map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        let coordinates = try mosaic.map { record -> (String, String) in
            let location = try #require(record["location"] as? [String: Any])
            return (try #require(location["latitude"] as? String), try #require(location["longitude"] as? String))
        }
        let lines = try await formatted(["--format", format])
        try #require(lines.count == 3, "\(lines)")
        for (line, (latitude, longitude)) in zip(lines, coordinates) {
            if format == "osmand" {
                #expect(line.contains("lat=\(latitude)") && line.contains("lon=\(longitude)"), "\(line)")
            } else {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(object != nil, "one JSON object per line: \(line)")
                #expect(line.contains(latitude) && line.contains(longitude), "\(line)")
            }
        }
        // The spool keeps all three records, as with the default format.
        #expect(try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).count() == 3)
    }

    /// SPEC §2: 200 MiB without a newline between two runs of fixes is skipped in constant
    /// memory, and the fixes after it (the first glued to the garbage's end) are read. Before,
    /// the replay stopped with exit 65 and lost them.
    @Test func twoHundredMiBWithoutANewlineIsReadPast() async throws {
        let path = geolocate.home.appendingPathComponent("garbage.nmea").path
        let before = NMEAText.fixes(latitude: 45.7640, longitude: 4.8357, date: "211126", time: "143000")
        let after = NMEAText.fixes(latitude: 53.3498, longitude: -6.2603, date: "211126", time: "150000")
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(before.utf8)))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        let block = Data(repeating: UInt8(ascii: "x"), count: 1 << 20)
        for _ in 0..<200 { try handle.write(contentsOf: block) }
        try handle.write(contentsOf: Data(after.utf8))
        try handle.close()
        let result = await geolocate.run(["track", "--replay", path, "--permission", "fine", "--every-fix", "--stdout", "--no-spool"])
        #expect(result.status == 0, "\(result.stderr)")
        let times = result.stdout.split(separator: "\n").compactMap { line -> Int? in
            let record = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return (record?["location"] as? [String: Any])?["recordTimestamp"] as? Int
        }
        let day = 1_795_219_200_000  // 2026-11-21T00:00:00Z
        let expected = [52_200, 52_201, 52_202, 54_000, 54_001, 54_002].map { day + $0 * 1000 }
        #expect(times == expected, "\(result.stderr)")
        try? FileManager.default.removeItem(atPath: path)
    }

    @Test func aDeviceWithoutThemHasNoKeys() async throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let result = await geolocate.run(["track", "--replay", drive, "--permission", "fine", "--every-fix", "--count", "2", "--stdout", "--no-spool"],
                                         environment: ["GEOLOCATE_DEVICE_ROOT": root.path])
        #expect(result.status == 0, "\(result.stderr)")
        let first = result.stdout.split(separator: "\n").first.map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let record = try #require(first ?? nil)
        for key in ["isCharging", "wifiSsid", "wifiBssid", "carrierName"] { #expect(record[key] == nil, "\(key)") }
    }
}
