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

/// The last known location across commands on a live source (gpsd unavailable): replayed
/// fixes never answer it, and stored fixes dated wrong are no answer (SPEC §3, §8). The
/// replay-only cases, and the state directory's mode, run in process (LastKnownReplayTests).
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct LastKnownEndToEndTests {
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
