import Foundation
import GeolocateCore
import Testing

/// The last known location across commands: live and replayed fixes kept apart, and a store
/// that one bad timestamp cannot wedge (SPEC §3, §8).
@Suite struct LastKnownEndToEndTests {
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

        // A replay still falls back to what the replay saw.
        let again = try geolocate.run(["trigger", "logout", "--replay", drive, "--permission", "fine"])
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

    /// A replay dated 2068 leaves a fix that a later replay of an older log replaces.
    @Test func aFutureDatedReplayDoesNotWedgeTheReplayStore() throws {
        try store("last-known-replay.json", timestamp: 3_093_206_400_000, provider: "NMEA_REPLAY")  // 2068-01-07
        let first = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--permission", "fine"])
        let fix = try #require(first.json()["location"] as? [String: Any])
        let later = try geolocate.run(["trigger", "logout", "--replay", drive, "--permission", "fine"])
        let known = try #require(later.json()["location"] as? [String: Any])
        #expect(known["recordTimestamp"] as? Int64 == fix["recordTimestamp"] as? Int64)
        #expect(known["latitude"] as? String == "53.3613367")
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
}
