import Foundation
import Testing

@Suite struct TriggerEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")

    @Test func currentFixFromAReplay() throws {
        let result = try geolocate.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--timeout", "10s"])
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

    @Test func timeoutFallsBackToLastKnownInVirtualTime() throws {
        // Nothing known yet: 1056 after 1500 ms of log time (the prelude lasts 8 s).
        let first = try geolocate.run(["trigger", "login", "--replay", drive, "--permission", "fine"])
        #expect(first.status == 0)
        #expect(try first.json()["errorCode"] as? Int == 1056)
        #expect(try first.json()["fallbackReason"] as? String == "timeout")

        // A run that sees a fix stores it; the next timeout falls back to it.
        _ = try geolocate.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--timeout", "10s"])
        let second = try geolocate.run(["trigger", "login", "--replay", drive, "--permission", "fine"])
        let record = try second.json()
        #expect(record["locationSource"] as? String == "last_known")
        #expect(record["fallbackReason"] as? String == "timeout")
        #expect(record["errorCode"] as? Int == 0)
        #expect(record["location"] is [String: Any])
    }

    @Test func forceLastKnownAndLastKnownAge() throws {
        let none = try geolocate.run(["trigger", "logout", "--replay", drive, "--permission", "fine"])
        #expect(try none.json()["collectionMode"] as? String == "force-last-known")
        #expect(try none.json()["errorCode"] as? Int == 1054)

        _ = try geolocate.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--timeout", "10s"])
        // 10 minutes after the stored fix: within last-known:30, not within last-known:5 (which then queries the replay).
        let now = "2026-11-21T08:10:08Z"
        let fresh = try geolocate.run(["trigger", "view", "--mode", "last-known:30", "--now", now, "--replay", drive, "--permission", "fine"])
        #expect(try fresh.json()["locationSource"] as? String == "last_known")
        #expect(try fresh.json()["ageMs"] as? Int == 600_000)
        let stale = try geolocate.run(["trigger", "view", "--mode", "last-known:5m", "--now", now, "--replay", drive,
                                       "--permission", "fine", "--timeout", "10s"])
        #expect(try stale.json()["locationSource"] as? String == "current")
        #expect(try stale.json()["collectionMode"] as? String == "last-known:5m")
    }

    @Test func noPermissionPrintsARecordAndAHint() throws {
        let result = try geolocate.run(["trigger", "login", "--replay", drive])
        #expect(result.status == 0)
        #expect(try result.json()["errorCode"] as? Int == 1055)
        #expect(try result.json()["location"] is NSNull)
        #expect(result.stderr.contains("geolocate config set permissions fine"))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func requireLocationExits3WithTheRecordStillPrinted() throws {
        let result = try geolocate.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--require-location"])
        #expect(result.status == 3)
        #expect(try result.json()["errorCode"] as? Int == 1056)
        let disabled = try geolocate.run(["trigger", "login", "--mode", "disabled", "--replay", drive, "--permission", "fine", "--require-location"])
        #expect(disabled.status == 3)
    }

    @Test func coarsePermission() throws {
        let result = try geolocate.run(["trigger", "login", "--replay", drive, "--permission", "coarse", "--timeout", "10s"])
        let location = try #require(try result.json()["location"] as? [String: Any])
        #expect(Double(location["accuracy"] as? String ?? "") ?? 0 >= 2000)
        #expect(location["altitude"] == nil)
        #expect(location["permissions"] as? [String] == ["coarse"])
    }

    @Test func replayFromStandardInput() throws {
        let log = try Data(contentsOf: GeolocateProcess.projectRoot.appendingPathComponent("Examples/nmea/kiosk-gnss.nmea"))
        let result = try geolocate.run(["trigger", "checkout", "--replay", "-", "--permission", "fine"], stdin: log)
        #expect(result.status == 0)
        let location = try #require(try result.json()["location"] as? [String: Any])
        #expect(location["latitude"] as? String == "45.7640000")
    }

    @Test func permissionsFromConfigAndNowOverride() throws {
        #expect(try geolocate.run(["config", "set", "permissions", "fine"]).status == 0)
        let result = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--now", "1795248010000"])
        #expect(try result.json()["triggeredAt"] as? Int == 1_795_248_010_000)
        #expect(try result.json()["ageMs"] as? Int == 2000)
    }

    @Test func gpsdNotYetAvailableIsAnUnavailableFallback() throws {
        let result = try geolocate.run(["trigger", "login", "--source", "gpsd://127.0.0.1:1", "--permission", "fine"])
        #expect(result.status == 0)
        #expect(try result.json()["fallbackReason"] as? String == "unavailable")
        #expect(try result.json()["errorCode"] as? Int == 1054)
        #expect(result.stderr.contains("127.0.0.1:1"))
    }

    /// SPEC §8: each error is one line on stderr, nothing on stdout, and its own exit code.
    @Test(arguments: [
        (["trigger", "login", "--mode", "sometimes"], Int32(64)),
        (["trigger", "login", "--timeout", "soon"], Int32(64)),
        (["trigger", "log in"], Int32(64)),
        (["trigger", "login", "--replay-speed", "fast", "--replay", "x"], Int32(64)),
        (["trigger", "login", "--source", "serial:/dev/ttyS0"], Int32(64)),
        (["trigger", "login", "--replay", "/nonexistent/drive.nmea", "--permission", "fine"], Int32(66)),
        (["trigger", "login", "--replay", "/", "--permission", "fine"], Int32(65)),
        (["track"], Int32(78)),
        (["track", "--replay", "/nonexistent/drive.nmea", "--permission", "fine"], Int32(66)),
        (["track", "--accuracy", "5m"], Int32(64)),
        (["flush"], Int32(78)),
        (["flush", "--batch-size", "0"], Int32(64)),
    ])
    func errors(_ arguments: [String], _ status: Int32) throws {
        let result = try geolocate.run(arguments)
        #expect(result.status == status, "\(arguments): \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("geolocate: ") || result.stderr.hasPrefix("Error: "))
        #expect(!result.stderr.contains("Fatal error"))
    }

    @Test func brokenNMEAIsSkippedNotFatal() throws {
        let garbage = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7919) })
        let log = try Data(contentsOf: GeolocateProcess.projectRoot.appendingPathComponent(drive))
        let result = try geolocate.run(["trigger", "login", "--replay", "-", "--permission", "fine", "--timeout", "10s"],
                                       stdin: garbage + log)
        #expect(result.status == 0)
        #expect(try result.json()["locationSource"] as? String == "current")
    }

    @Test func version() throws {
        let result = try geolocate.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.first?.isNumber == true)
    }
}
