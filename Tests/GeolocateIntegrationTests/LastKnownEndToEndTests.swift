import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The last known location across commands: live and replayed fixes kept apart, and a store
/// that one bad timestamp cannot wedge (SPEC §3, §8).
@Suite(.tags(.integration), .timeLimit(.minutes(20))) struct LastKnownEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")
    /// Nothing listens on port 1: gpsd is unavailable there.
    let noGpsd = "gpsd://127.0.0.1:1"

    /// A fix as `last-known*.json` holds it, written by the test, not by geolocate.
    func store(_ file: String, timestamp: Int64, provider: String, latitude: Double = 48.85) throws {
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        let json = #"{"latitude":\#(latitude),"longitude":2.35,"mode":"3D","provider":"\#(provider)","timestamp":\#(timestamp)}"#
        try Data(json.utf8).write(to: URL(fileURLWithPath: geolocate.stateDirectory + "/" + file))
    }

    var nowMilliseconds: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    @Test func aReplayedFixNeverAnswersALiveLogin() throws {
        let replayed = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine"])
        #expect(replayed.status == 0)
        #expect(try replayed.json()["location"] as? [String: Any] != nil)

        let live = try geolocate.run(["trigger", "login", "--source", noGpsd, "--require-location", "--permission", "fine"])
        #expect(live.status == 3, "\(live.stdout)")
        #expect(try live.json()["location"] is NSNull)

        // A replay (of a log of the next day) still falls back to what the replay saw.
        let again = try geolocate.run(["trigger", "logout", "--replay", GeolocateProcess.fixture("nofix-only.nmea"), "--permission", "fine"])
        #expect((try again.json()["location"] as? [String: Any])?["provider"] as? String == "NMEA_REPLAY")
    }

    /// An earlier version kept replayed fixes in last-known.json: they do not count as live.
    @Test func aReplayedFixLeftInTheLiveStoreIsIgnored() throws {
        try store("last-known.json", timestamp: nowMilliseconds - 60_000, provider: "NMEA_REPLAY")
        let live = try geolocate.run(["trigger", "logout", "--source", noGpsd, "--require-location", "--permission", "fine"])
        #expect(live.status == 3, "\(live.stdout)")
    }

    /// A live fix dated 2099 is no last known location, and the next real fix replaces it.
    @Test func aFutureDatedLiveFixIsNotReported() throws {
        try store("last-known.json", timestamp: 4_070_908_800_000, provider: "GPSD")  // 2099-01-01
        let result = try geolocate.run(["trigger", "logout", "--source", noGpsd, "--permission", "fine"])
        #expect(result.status == 0)
        #expect(try result.json()["location"] is NSNull)
        #expect(try result.json()["errorCode"] as? Int == 1054)
    }

    /// A stored fix dated before the GPS epoch (1980-01-06), as earlier versions kept one from
    /// a gpsd report dated year 1, is no last known location either.
    @Test func aLiveFixDatedBeforeTheGPSEpochIsNotReported() throws {
        try store("last-known.json", timestamp: 315_964_799_999, provider: "GPSD")
        let result = try geolocate.run(["trigger", "logout", "--source", noGpsd, "--permission", "fine"])
        #expect(result.status == 0)
        #expect(try result.json()["location"] is NSNull)
    }

    /// The drive log with its dates moved to 2068, checksums recomputed: a log dated wrong.
    func driveDated2068() throws -> String {
        let text = try String(contentsOf: GeolocateProcess.projectRoot.appendingPathComponent(drive), encoding: .utf8)
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
    @Test func aFutureDatedReplayDoesNotWedgeTheStore() throws {
        let future = try geolocate.run(["trigger", "login", "--replay", try driveDated2068(), "--timeout", "10s", "--permission", "fine"])
        let wrong = try #require(future.json()["location"] as? [String: Any])
        #expect(wrong["recordTimestamp"] as? Int64 ?? 0 > 3_000_000_000_000)
        let first = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine"])
        let fix = try #require(first.json()["location"] as? [String: Any])
        let later = try geolocate.run(["trigger", "logout", "--replay", GeolocateProcess.fixture("nofix-only.nmea"), "--permission", "fine"])
        let known = try #require(later.json()["location"] as? [String: Any])
        #expect(known["recordTimestamp"] as? Int64 == fix["recordTimestamp"] as? Int64)
    }

    /// `lastKnownMaxAge` bounds the fallback after an unavailable source; the action's own
    /// value wins; force-last-known is not a fallback and is not bounded.
    @Test func lastKnownMaxAgeBoundsTheFallback() throws {
        try store("last-known.json", timestamp: nowMilliseconds - 2 * 3_600_000, provider: "GPSD")
        let login = ["trigger", "login", "--source", noGpsd, "--permission", "fine"]
        let unlimited = try geolocate.run(login).json()
        #expect(unlimited["location"] as? [String: Any] != nil && unlimited["fallbackReason"] as? String == "unavailable")

        #expect(try geolocate.run(["config", "set", "lastKnownMaxAge", "1h"]).status == 0)
        let bounded = try geolocate.run(login).json()
        #expect(bounded["location"] is NSNull && bounded["errorCode"] as? Int == 1054)
        #expect(bounded["fallbackReason"] as? String == "unavailable")
        let logout = try geolocate.run(["trigger", "logout", "--source", noGpsd, "--permission", "fine"]).json()
        #expect(logout["location"] as? [String: Any] != nil)

        #expect(try geolocate.run(["config", "set", "actions.login.lastKnownMaxAge", "3h"]).status == 0)
        #expect(try geolocate.run(login).json()["location"] as? [String: Any] != nil)
    }

    /// A state directory of ours open to others is made private, with one warning.
    @Test func anOpenStateDirectoryIsTightened() throws {
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        chmod(geolocate.stateDirectory, 0o777)
        let result = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine"])
        #expect(result.status == 0)
        #expect(result.stderr.contains("mode 777") && result.stderr.contains("0700"), "\(result.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: geolocate.stateDirectory)[.posixPermissions] as? Int
        #expect(mode == 0o700)
    }

    /// A state directory reached through a symlink is judged by the directory it points to:
    /// before, lstat saw the link and neither tightened nor warned.
    @Test func anOpenStateDirectoryBehindASymlinkIsTightened() throws {
        let target = geolocate.home.appendingPathComponent("real-state").path
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        chmod(target, 0o777)
        let link = geolocate.home.appendingPathComponent("state-link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let result = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine"],
                                       environment: ["GEOLOCATE_STATE_DIR": link])
        #expect(result.status == 0)
        #expect(result.stderr.contains("now 0700"), "\(result.stderr)")
        #expect(try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int == 0o700)
    }

    /// The signals' previous-report files are ours too: before, the list of our names lacked
    /// them, so after one trigger a directory opened to 0755 counted as shared and was never
    /// tightened again.
    @Test func aDirectoryWithPreviousReportsIsStillTightened() throws {
        let first = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine"])
        #expect(first.status == 0, "\(first.stderr)")
        for name in ["previous-report-replay.json", "previous-report.lock"] {
            #expect(FileManager.default.fileExists(atPath: geolocate.stateDirectory + "/" + name), "\(name)")
        }
        #expect(chmod(geolocate.stateDirectory, 0o755) == 0)
        let result = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine"])
        #expect(result.status == 0)
        #expect(result.stderr.contains("mode 755") && result.stderr.contains("now 0700"), "\(result.stderr)")
        #expect(!result.stderr.contains("shared with other files"), "\(result.stderr)")
        #expect(try FileManager.default.attributesOfItem(atPath: geolocate.stateDirectory)[.posixPermissions] as? Int == 0o700)
    }

    /// A shared directory (sticky, or holding files that are not ours) keeps its mode: the
    /// user pointed us at it, and tightening it would break what else lives there.
    @Test(arguments: [(0o1777, false), (0o777, true)])
    func aSharedStateDirectoryKeepsItsMode(mode: Int, withForeignFile: Bool) throws {
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        if withForeignFile { #expect(FileManager.default.createFile(atPath: geolocate.stateDirectory + "/notes.txt", contents: Data())) }
        chmod(geolocate.stateDirectory, mode_t(mode))
        let result = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine"])
        #expect(result.status == 0)
        #expect(result.stderr.contains("mode \(String(mode, radix: 8))") && result.stderr.contains("left as it is"), "\(result.stderr)")
        let after = try FileManager.default.attributesOfItem(atPath: geolocate.stateDirectory)[.posixPermissions] as? Int
        #expect(after == mode)
    }
}
