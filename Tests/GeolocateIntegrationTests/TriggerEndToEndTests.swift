import Foundation
import Testing

@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct TriggerEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")

    @Test func replayFromStandardInput() throws {
        let log = try Data(contentsOf: GeolocateProcess.projectRoot.appendingPathComponent("Examples/nmea/kiosk-gnss.nmea"))
        let result = try geolocate.run(["trigger", "checkout", "--replay", "-", "--permission", "fine"], stdin: log)
        #expect(result.status == 0)
        let location = try #require(try result.json()["location"] as? [String: Any])
        #expect(location["latitude"] as? String == "45.7640000")
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
