import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The last known location across runs on replays, in this process (moved from
/// LastKnownEndToEndTests, which keeps the live source): a store that one replay dated wrong
/// cannot wedge, and a state directory made private unless it is shared (SPEC §3, §8).
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct LastKnownReplayTests {
    let geolocate = InProcessTrigger()
    let drive = InProcessTrigger.example("maynooth-drive.nmea")

    /// The drive log with its dates moved to 2068, checksums recomputed: a log dated wrong.
    func driveDated2068() throws -> String {
        let text = try String(contentsOf: TestPaths.projectRoot.appendingPathComponent(drive), encoding: .utf8)
        let lines = text.split(separator: "\n").map { line -> String in
            guard line.hasPrefix("$"), let star = line.lastIndex(of: "*") else { return String(line) }
            let body = line[line.index(after: line.startIndex)..<star].replacingOccurrences(of: ",211126,", with: ",211168,")
            let checksum = body.utf8.reduce(UInt8(0), ^)
            return "$" + body + "*" + String(format: "%02X", checksum)
        }
        let path = geolocate.home.appendingPathComponent("drive-2068.nmea").path
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A replay dated 2068 leaves a fix that a later replay of a log of today replaces.
    @Test func aFutureDatedReplayDoesNotWedgeTheStore() async throws {
        let future = await geolocate.run(["trigger", "login", "--replay", try driveDated2068(), "--timeout", "10s", "--permission", "fine"])
        let wrong = try #require(future.json()["location"] as? [String: Any])
        #expect(wrong["recordTimestamp"] as? Int64 ?? 0 > 3_000_000_000_000)
        let first = await geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine"])
        let fix = try #require(first.json()["location"] as? [String: Any])
        let later = await geolocate.run(["trigger", "logout", "--replay", InProcessTrigger.fixture("nofix-only.nmea"), "--permission", "fine"])
        let known = try #require(later.json()["location"] as? [String: Any])
        #expect(known["recordTimestamp"] as? Int64 == fix["recordTimestamp"] as? Int64)
    }

    /// A state directory of ours open to others is made private, with one warning.
    @Test func anOpenStateDirectoryIsTightened() async throws {
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        chmod(geolocate.stateDirectory, 0o777)
        let result = await geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine"])
        #expect(result.status == 0)
        #expect(result.stderr.contains("mode 777") && result.stderr.contains("0700"), "\(result.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: geolocate.stateDirectory)[.posixPermissions] as? Int
        #expect(mode == 0o700)
    }

    /// A state directory reached through a symlink is judged by the directory it points to:
    /// before, lstat saw the link and neither tightened nor warned.
    @Test func anOpenStateDirectoryBehindASymlinkIsTightened() async throws {
        let target = geolocate.home.appendingPathComponent("real-state").path
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        chmod(target, 0o777)
        let link = geolocate.home.appendingPathComponent("state-link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let result = await geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine"],
                                       environment: ["GEOLOCATE_STATE_DIR": link])
        #expect(result.status == 0)
        #expect(result.stderr.contains("now 0700"), "\(result.stderr)")
        #expect(try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int == 0o700)
    }

    /// The signals' previous-report files are ours too: before, the list of our names lacked
    /// them, so after one trigger a directory opened to 0755 counted as shared and was never
    /// tightened again.
    @Test func aDirectoryWithPreviousReportsIsStillTightened() async throws {
        let first = await geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine"])
        #expect(first.status == 0, "\(first.stderr)")
        for name in ["previous-report-replay.json", "previous-report.lock"] {
            #expect(FileManager.default.fileExists(atPath: geolocate.stateDirectory + "/" + name), "\(name)")
        }
        #expect(chmod(geolocate.stateDirectory, 0o755) == 0)
        let result = await geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine"])
        #expect(result.status == 0)
        #expect(result.stderr.contains("mode 755") && result.stderr.contains("now 0700"), "\(result.stderr)")
        #expect(!result.stderr.contains("shared with other files"), "\(result.stderr)")
        #expect(try FileManager.default.attributesOfItem(atPath: geolocate.stateDirectory)[.posixPermissions] as? Int == 0o700)
    }

    /// A shared directory (sticky, or holding files that are not ours) keeps its mode: the
    /// user pointed us at it, and tightening it would break what else lives there.
    @Test(arguments: [(0o1777, false), (0o777, true)])
    func aSharedStateDirectoryKeepsItsMode(mode: Int, withForeignFile: Bool) async throws {
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        if withForeignFile { #expect(FileManager.default.createFile(atPath: geolocate.stateDirectory + "/notes.txt", contents: Data())) }
        chmod(geolocate.stateDirectory, mode_t(mode))
        let result = await geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine"])
        #expect(result.status == 0)
        #expect(result.stderr.contains("mode \(String(mode, radix: 8))") && result.stderr.contains("left as it is"), "\(result.stderr)")
        let after = try FileManager.default.attributesOfItem(atPath: geolocate.stateDirectory)[.posixPermissions] as? Int
        #expect(after == mode)
    }
}
