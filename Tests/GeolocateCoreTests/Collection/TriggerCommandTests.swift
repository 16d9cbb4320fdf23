import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateModel
import Testing

/// `trigger` on replays in this process, with what it prints, logs and exits with (moved
/// from TriggerEndToEndTests: the collection modes, the fallbacks and their times need no
/// process; the flags' parsing, stdin and gpsd stay there).
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct TriggerCommandTests {
    let trigger = InProcessTrigger()
    let drive = "Examples/nmea/maynooth-drive.nmea"

    @Test func currentFixFromAReplay() async throws {
        let result = await trigger.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--timeout", "10s"])
        #expect(result.status == 0, "\(result.stderr)")
        let record = try result.json()
        let location = try #require(record["location"] as? [String: Any])
        #expect(record["action"] as? String == "login")
        #expect(record["requestedMode"] as? String == "default")
        #expect(record["collectionMode"] as? String == "force-current")
        #expect(record["locationSource"] as? String == "current")
        #expect(record["errorCode"] as? Int == 0)
        #expect(record["ageMs"] as? Int == 0)
        #expect(location["provider"] as? String == "NMEA_REPLAY")
        #expect(location["latitude"] as? String == "53.3613367")
        #expect(location["longitude"] as? String == "-6.5056200")
        #expect(location["recordTimestamp"] as? Int == 1_795_248_008_000)  // 2026-11-21T08:00:08Z, after the prelude
        #expect(location["permissions"] as? [String] == ["fine"])
        #expect(result.stdout.hasSuffix("}\n") && result.stdout.split(separator: "\n").count == 1)
    }

    @Test func timeoutFallsBackToLastKnownInVirtualTime() async throws {
        // Nothing known yet: 1056 after 1500 ms of log time (the prelude lasts 8 s).
        let first = await trigger.run(["trigger", "login", "--replay", drive, "--permission", "fine"])
        #expect(first.status == 0)
        #expect(try first.json()["errorCode"] as? Int == 1056)
        #expect(try first.json()["fallbackReason"] as? String == "timeout")

        // A run that sees a fix stores it; a timeout on a log of the next day falls back to it.
        _ = await trigger.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--timeout", "10s"])
        let second = await trigger.run(["trigger", "login", "--replay", TestPaths.fixture("nofix-only.nmea").path, "--permission", "fine"])
        let record = try second.json()
        #expect(record["locationSource"] as? String == "last_known")
        #expect(record["fallbackReason"] as? String == "timeout")
        #expect(record["errorCode"] as? Int == 0)
        #expect(record["location"] is [String: Any])
    }

    @Test func forceLastKnownAndLastKnownAge() async throws {
        let none = await trigger.run(["trigger", "logout", "--replay", drive, "--permission", "fine"])
        #expect(try none.json()["collectionMode"] as? String == "force-last-known")
        #expect(try none.json()["errorCode"] as? Int == 1054)

        _ = await trigger.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--timeout", "10s"])
        // 10 minutes after the stored fix: within last-known:30, not within last-known:5 (which then queries the replay).
        let now = "2026-11-21T08:10:08Z"
        let fresh = await trigger.run(["trigger", "view", "--mode", "last-known:30", "--now", now, "--replay", drive, "--permission", "fine"])
        #expect(try fresh.json()["locationSource"] as? String == "last_known")
        #expect(try fresh.json()["ageMs"] as? Int == 600_000)
        // The replay's fixes within the 10 s of log it waits are 10 minutes older than --now: none
        // is current (SPEC §3), so it falls back to the last known location, saying why.
        let stale = await trigger.run(["trigger", "view", "--mode", "last-known:5m", "--now", now, "--replay", drive,
                                       "--permission", "fine", "--timeout", "10s"])
        #expect(try stale.json()["locationSource"] as? String == "last_known", "\(stale.stderr)")
        #expect(try stale.json()["fallbackReason"] as? String == "timeout")
        #expect((try stale.json()["ageMs"] as? Int).map { $0 >= 590_000 } == true)
        #expect(try stale.json()["collectionMode"] as? String == "last-known:5m")
        #expect(stale.stderr.contains("so it is not current"), "\(stale.stderr)")
    }

    @Test func noPermissionPrintsARecordAndAHint() async throws {
        let result = await trigger.run(["trigger", "login", "--replay", drive])
        #expect(result.status == 0)
        #expect(try result.json()["errorCode"] as? Int == 1055)
        #expect(try result.json()["location"] is NSNull)
        #expect(result.stderr.contains("geolocate config set permissions fine"))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func requireLocationExits3WithTheRecordStillPrinted() async throws {
        let result = await trigger.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--require-location"])
        #expect(result.status == 3)
        #expect(try result.json()["errorCode"] as? Int == 1056)
        let disabled = await trigger.run(["trigger", "login", "--mode", "disabled", "--replay", drive, "--permission", "fine", "--require-location"])
        #expect(disabled.status == 3)
    }

    @Test func coarsePermission() async throws {
        let result = await trigger.run(["trigger", "login", "--replay", drive, "--permission", "coarse", "--timeout", "10s"])
        let location = try #require(try result.json()["location"] as? [String: Any])
        #expect(Double(location["accuracy"] as? String ?? "") ?? 0 >= 2000)
        #expect(location["altitude"] == nil)
        #expect(location["permissions"] as? [String] == ["coarse"])
    }

    @Test func permissionsFromConfigAndNowOverride() async throws {
        try ConfigStore(path: trigger.configPath).set("permissions", to: "fine")
        let result = await trigger.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--now", "1795248010000"])
        #expect(try result.json()["triggeredAt"] as? Int == 1_795_248_010_000)
        #expect(try result.json()["ageMs"] as? Int == 2000)
    }

    /// `--now` in ISO 8601 is read strictly: an offset or a date out of range is refused, not
    /// read as another time (`+25:00` used to be accepted). Expected values from Python's
    /// `datetime.fromisoformat`.
    @Test(arguments: [
        ("2026-11-22T05:00:00.123+01:00", 1_795_320_000_123), ("1969-12-31T23:59:59.5-00:30", 1_799_500),
        ("2026-11-22T05:00:00+25:00", nil), ("2026-11-22T05:00:00+01:60", nil), ("2026-02-30T05:00:00Z", nil),
        ("2026-11-22T24:00:00Z", nil), ("2026-11-22T05:00:00", nil), ("2026-11-22T05:00:00Zjunk", nil),
    ] as [(String, Int?)])
    func nowIsReadStrictly(_ text: String, _ expected: Int?) async throws {
        try ConfigStore(path: trigger.configPath).set("permissions", to: "fine")
        let result = await trigger.run(["trigger", "login", "--replay", drive, "--now", text])
        if let expected {
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try result.json()["triggeredAt"] as? Int == expected)
        } else {
            #expect(result.status == 64, "\(text) accepted")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains("invalid time '\(text)'"))
        }
    }

    /// D15 on a replay: the timeout runs on virtual time, exactly.
    @Test func forceCurrentTimeoutOnAReplayIsNearInstant() async throws {
        // Measured on the log's clock, not the machine's (whose load would make it flaky): a
        // timeout one second longer ends exactly one second of log time later.
        func triggeredAt(timeout: String) async throws -> Int64? {
            let result = await trigger.run(["trigger", "login", "--mode", "force-current", "--timeout", timeout,
                                            "--replay", TestPaths.fixture("nofix-only.nmea").path, "--permission", "fine"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try result.json()["fallbackReason"] as? String == "timeout")
            return try result.json()["triggeredAt"] as? Int64
        }
        let one = try #require(try await triggeredAt(timeout: "1s")), two = try #require(try await triggeredAt(timeout: "2s"))
        #expect(two - one == 1000)
    }
}
