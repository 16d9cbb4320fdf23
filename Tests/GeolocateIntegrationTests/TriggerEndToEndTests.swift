import Foundation
import Testing

@Suite(.tags(.integration), .timeLimit(.minutes(20))) struct TriggerEndToEndTests {
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

        // A run that sees a fix stores it; a timeout on a log of the next day falls back to it.
        _ = try geolocate.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--timeout", "10s"])
        let second = try geolocate.run(["trigger", "login", "--replay", GeolocateProcess.fixture("nofix-only.nmea"), "--permission", "fine"])
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
        // The replay's fixes within the 10 s of log it waits are 10 minutes older than --now: none
        // is current (SPEC §3), so it falls back to the last known location, saying why.
        let stale = try geolocate.run(["trigger", "view", "--mode", "last-known:5m", "--now", now, "--replay", drive,
                                       "--permission", "fine", "--timeout", "10s"])
        #expect(try stale.json()["locationSource"] as? String == "last_known", "\(stale.stderr)")
        #expect(try stale.json()["fallbackReason"] as? String == "timeout")
        #expect((try stale.json()["ageMs"] as? Int).map { $0 >= 590_000 } == true)
        #expect(try stale.json()["collectionMode"] as? String == "last-known:5m")
        #expect(stale.stderr.contains("so it is not current"), "\(stale.stderr)")
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
        // The range endpoints.NAME.batchSize takes, not any integer (100001 used to be taken).
        (["flush", "--batch-size", "100001"], Int32(64)),
        (["flush", "--batch-size", "9223372036854775807"], Int32(64)),
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

    /// `--now` in ISO 8601 is read strictly: an offset or a date out of range is refused, not
    /// read as another time (`+25:00` used to be accepted). Expected values from Python's
    /// `datetime.fromisoformat`.
    @Test(arguments: [
        ("2026-11-22T05:00:00.123+01:00", 1_795_320_000_123), ("1969-12-31T23:59:59.5-00:30", 1_799_500),
        ("2026-11-22T05:00:00+25:00", nil), ("2026-11-22T05:00:00+01:60", nil), ("2026-02-30T05:00:00Z", nil),
        ("2026-11-22T24:00:00Z", nil), ("2026-11-22T05:00:00", nil), ("2026-11-22T05:00:00Zjunk", nil),
    ] as [(String, Int?)])
    func nowIsReadStrictly(_ text: String, _ expected: Int?) throws {
        try #require(try geolocate.run(["config", "set", "permissions", "fine"]).status == 0)
        let result = try geolocate.run(["trigger", "login", "--replay", drive, "--now", text])
        if let expected {
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try result.json()["triggeredAt"] as? Int == expected)
        } else {
            #expect(result.status == 64, "\(text) accepted")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains("invalid time '\(text)'"))
        }
    }

    @Test func version() throws {
        let result = try geolocate.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.first?.isNumber == true)
    }

    /// D16: an invalid mode is exit 64, and its error line names the valid modes (after it,
    /// only the usage synopsis that SPEC §8 allows).
    @Test(arguments: ["last-known:", "last-known:abc", "last-known:1e300", "sometimes"])
    func anInvalidModeNamesTheValidOnes(_ mode: String) throws {
        let result = try geolocate.run(["trigger", "login", "--mode", mode, "--replay", drive])
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        let lines = result.stderr.split(separator: "\n")
        let first = try #require(lines.first.map(String.init))
        #expect(first.contains("'\(mode)'"), "\(first)")
        for valid in ["default", "disabled", "force-current", "force-last-known", "last-known:N", "90s", "30m", "2h"] {
            #expect(first.contains(valid), "\(valid) missing from \(first)")
        }
        #expect(lines.count == 1 && first.hasPrefix("geolocate: ") && first.hasSuffix("(see 'geolocate trigger --help')"),
                "\(result.stderr)")
    }

    /// D15 on a replay: the timeout runs on virtual time, exactly.
    @Test func forceCurrentTimeoutOnAReplayIsNearInstant() throws {
        // Measured on the log's clock, not the machine's (whose load would make it flaky): a
        // timeout one second longer ends exactly one second of log time later.
        func triggeredAt(timeout: String) throws -> Int64? {
            let result = try geolocate.run(["trigger", "login", "--mode", "force-current", "--timeout", timeout,
                                            "--replay", GeolocateProcess.fixture("nofix-only.nmea"), "--permission", "fine"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try result.json()["fallbackReason"] as? String == "timeout")
            return try result.json()["triggeredAt"] as? Int64
        }
        let one = try #require(try triggeredAt(timeout: "1s")), two = try #require(try triggeredAt(timeout: "2s"))
        #expect(two - one == 1000)
    }

    /// C11 through the binary: values out of range in a replayed log are left out, and a
    /// position with an unknown hemisphere is no fix.
    @Test func outOfRangeNMEAValuesAreLeftOut() throws {
        func sentence(_ body: String) -> String {
            "$" + body + "*" + String(format: "%02X", body.utf8.reduce(UInt8(0)) { $0 ^ $1 }) + "\r\n"
        }
        let log = [
            // 12:00:00 hemisphere X: before, read as N.
            "GPGGA,120000,4807.038,X,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
            "GPRMC,120000,A,4807.038,X,01131.000,E,022.4,084.4,221126,,,A",
            // 12:00:01 HDOP -1, speed -5 kn, course 999: before, accuracy "-5.3", speed and course printed.
            "GPGGA,120001,4807.038,N,01131.000,E,1,08,-1.0,545.4,M,46.9,M,,",
            "GPRMC,120001,A,4807.038,N,01131.000,E,-5.0,999.0,221126,,,A",
            "GPGGA,120002,4807.038,N,01131.000,E,1,08,-1.0,545.4,M,46.9,M,,",
        ].map(sentence).joined()
        let result = try geolocate.run(["trigger", "login", "--replay", "-", "--permission", "fine", "--timeout", "10s"],
                                       stdin: Data(log.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let location = try #require(try result.json()["location"] as? [String: Any], "\(result.stdout)")
        #expect(location["recordTimestamp"] as? Int == 1_795_348_801_000)  // 12:00:01, not 12:00:00
        #expect(location["latitude"] as? String == "48.1173000")  // 48° 7.038′ N
        for key in ["accuracy", "speed", "course"] {
            #expect(location[key] == nil, "\(key): \(location[key] ?? "")")
        }
        #expect(location["altitude"] as? String == "592.3")  // 545.4 + 46.9
    }
}
