import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `geolocate status` (SPEC §12) in each state it must tell apart, with `--check`'s exit code
/// and line as a monitoring system reads them, and `--json`.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct StatusEndToEndTests {
    let geolocate = GeolocateProcess()

    func set(_ key: String, _ value: String) throws {
        let result = try geolocate.run(["config", "set", key, value])
        try #require(result.status == 0, "\(result.stderr)")
    }

    func check() throws -> (status: Int32, line: String) {
        let result = try geolocate.run(["status", "--check"])
        #expect(result.stdout.split(separator: "\n").count == 1, "one line: \(result.stdout)")
        return (result.status, result.stdout.trimmingCharacters(in: .newlines))
    }

    func json() throws -> [String: Any] {
        let result = try geolocate.run(["status", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        return try result.json()
    }

    /// Spools a generated drive of `epochs` fixes that began `hoursAgo` hours ago.
    func spool(hoursAgo: Double, epochs: Int = 30) throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let log = geolocate.home.appendingPathComponent("drive-\(hoursAgo).nmea").path
        try Tool.generateNMEA(["--epochs", String(epochs), "--seed", "3", "--out", log,
                                 "--start", ISO8601DateFormatter().string(from: Date().addingTimeInterval(-hoursAgo * 3600))])
        let result = try geolocate.run(["track", "--replay", log, "--every-fix", "--permission", "fine"])
        try #require(result.status == 0, "\(result.stderr)")
    }

    @Test func emptyIsOK() throws {
        try set("source", "nmea:" + GeolocateProcess.example("kiosk-gnss.nmea"))
        let (status, line) = try check()
        #expect(status == 0)
        #expect(line.hasPrefix("GEOLOCATE OK - no spool yet, 0 pending (state \(geolocate.stateDirectory)) | ") && line.contains("pending=0;;;0") && line.contains("dead_letters=0;;0;0"), "\(line)")
        let text = try geolocate.run(["status"])
        #expect(text.status == 0 && text.stdout.contains("pending:") && text.stdout.contains(geolocate.stateDirectory))
    }

    @Test func recentPendingIsOKAndCountedPerEndpoint() throws {
        try set("source", "nmea:" + GeolocateProcess.example("kiosk-gnss.nmea"))
        try set("endpoints.main.url", "http://127.0.0.1:9/in")
        try spool(hoursAgo: 0.2)
        let (status, line) = try check()
        #expect(status == 0, "\(line)")
        #expect(line.contains("30 pending") && line.contains("pending=30;;;0"), "\(line)")
        let report = try json()
        let endpoints = try #require(report["endpoints"] as? [[String: Any]])
        #expect(endpoints.first?["name"] as? String == "main" && endpoints.first?["pending"] as? Int == 30)
        #expect((report["spool"] as? [String: Any])?["pending"] as? Int == 30)
    }

    @Test(arguments: [(2.0, Int32(1), "WARNING"), (25.0, Int32(2), "CRITICAL")])
    func oldPendingWarnsThenIsCritical(hoursAgo: Double, expected: Int32, label: String) throws {
        try set("source", "nmea:" + GeolocateProcess.example("kiosk-gnss.nmea"))
        try set("endpoints.main.url", "http://127.0.0.1:9/in")
        try spool(hoursAgo: hoursAgo)
        let (status, line) = try check()
        #expect(status == expected)
        #expect(line.hasPrefix("GEOLOCATE \(label) - oldest pending record \(hoursAgo == 2 ? "1h" : "1d") old") || line.hasPrefix("GEOLOCATE \(label) - oldest pending record"), "\(line)")
        #expect(line.contains("oldest_pending=") && line.contains(";3600;86400;0"), "\(line)")
    }

    @Test func deadLettersAreCritical() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/in": ["default": ["status": 422]]])
        try set("source", "nmea:" + GeolocateProcess.example("kiosk-gnss.nmea"))
        try set("endpoints.main.url", collector.url("/in"))
        try spool(hoursAgo: 0.1, epochs: 3)
        _ = try geolocate.run(["flush"])
        let (status, line) = try check()
        #expect(status == 2)
        #expect(line.hasPrefix("GEOLOCATE CRITICAL - 3 dead letters"), "\(line)")
        #expect((try json()["spool"] as? [String: Any])?["deadLetters"] as? Int == 3)
    }

    @Test func gpsdDownIsCritical() throws {
        let (port, fd) = try Loopback.refusingPort()
        defer { close(fd) }
        try set("source", "gpsd://127.0.0.1:\(port)")
        let (status, line) = try check()
        #expect(status == 2)
        #expect(line.hasPrefix("GEOLOCATE CRITICAL - gpsd unreachable"), "\(line)")
        let gpsd = try #require(try json()["gpsd"] as? [String: Any])
        #expect(gpsd["reachable"] as? Bool == false)
    }

    @Test func gpsdWithAFixIsOK() throws {
        // A log dated now: gpsd reports the receiver's time, and a fix a day old is CRITICAL.
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let log = geolocate.home.appendingPathComponent("now.nmea").path
        try Tool.generateNMEA(["--epochs", "600", "--seed", "5", "--out", log, "--start", ISO8601DateFormatter().string(from: Date())])
        let fake = try GPSDFake(log: log)
        defer { fake.stop() }
        try set("source", fake.source)
        let trigger = try geolocate.run(["trigger", "login", "--permission", "fine", "--timeout", "5s"])
        #expect(trigger.status == 0, "\(trigger.stderr)")
        let (status, line) = try check()
        #expect(status == 0, "\(line)")
        #expect(line.contains("last fix") && line.contains("last_fix_age="), "\(line)")
        let gpsd = try #require(try json()["gpsd"] as? [String: Any])
        #expect(gpsd["reachable"] as? Bool == true && gpsd["fixMode"] as? String == "3D")
        #expect((gpsd["device"] as? String)?.hasPrefix("/") == true, "\(gpsd)")
    }

    @Test func anEndpointRefusingTheCredentialsIsCriticalAtOnce() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/in": ["default": ["status": 401]]])
        try set("source", "nmea:" + GeolocateProcess.example("kiosk-gnss.nmea"))
        try set("endpoints.main.url", collector.url("/in"))
        try spool(hoursAgo: 0.05, epochs: 3)
        let flush = try geolocate.run(["flush"])
        try #require(flush.status == 78, "\(flush.stderr)")
        // The records are minutes old: only the endpoint's answer makes this CRITICAL.
        let (status, line) = try check()
        #expect(status == 2)
        #expect(line.hasPrefix("GEOLOCATE CRITICAL - endpoint main failed: HTTP 401"), "\(line)")
        let endpoint = try #require((try json()["endpoints"] as? [[String: Any]])?.first)
        #expect(endpoint["lastErrorKind"] as? String == "configuration", "\(endpoint)")
    }

    @Test func aRefusedConnectionIsCriticalAtOnce() throws {
        let (port, fd) = try Loopback.refusingPort()
        defer { close(fd) }
        try set("source", "nmea:" + GeolocateProcess.example("kiosk-gnss.nmea"))
        try set("endpoints.main.url", "http://127.0.0.1:\(port)/in")
        try spool(hoursAgo: 0.05, epochs: 3)
        let flush = try geolocate.run(["flush"])
        try #require(flush.status == 75, "\(flush.stderr)")
        let (status, line) = try check()
        #expect(status == 2)
        #expect(line.hasPrefix("GEOLOCATE CRITICAL - endpoint main failed: cannot connect to 127.0.0.1:\(port): connection refused"), "\(line)")
    }

    @Test func aServerErrorWaitsForTheAges() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/in": ["default": ["status": 503]]])
        try set("source", "nmea:" + GeolocateProcess.example("kiosk-gnss.nmea"))
        try set("endpoints.main.url", collector.url("/in"))
        try spool(hoursAgo: 0.05, epochs: 3)
        let flush = try geolocate.run(["flush"])
        try #require(flush.status == 75, "\(flush.stderr)")
        let (status, line) = try check()
        #expect(status == 0 && line.hasPrefix("GEOLOCATE OK - 3 pending"), "\(line)")
        let endpoint = try #require((try json()["endpoints"] as? [[String: Any]])?.first)
        #expect(endpoint["lastErrorKind"] as? String == "temporary", "\(endpoint)")
    }

    @Test func warningAndCriticalAgesAreSetByTheFlags() throws {
        try set("source", "nmea:" + GeolocateProcess.example("kiosk-gnss.nmea"))
        try set("endpoints.main.url", "http://127.0.0.1:9/in")
        // The ages are the records' own times: 90 s, then 3 min before now.
        try spool(hoursAgo: 90.0 / 3600, epochs: 3)
        let warned = try geolocate.run(["status", "--check", "-w", "1m", "-c", "2m"])
        #expect(warned.status == 1 && warned.stdout.hasPrefix("GEOLOCATE WARNING - oldest pending record 9"), "\(warned.stdout)")
        #expect(warned.stdout.contains("oldest_pending=9") && warned.stdout.contains(";60;120;0"), "\(warned.stdout)")
        #expect(try check().status == 0, "the defaults are 1h and 24h")
        try spool(hoursAgo: 3.0 / 60, epochs: 3)
        let critical = try geolocate.run(["status", "--check", "--warning", "1m", "--critical", "2m"])
        #expect(critical.status == 2 && critical.stdout.hasPrefix("GEOLOCATE CRITICAL - oldest pending record 3m old"), "\(critical.stdout)")
        let reversed = try geolocate.run(["status", "--check", "-w", "2h", "-c", "1h"])
        // A plugin's usage error is UNKNOWN on stdout, as monitoring plugins say it.
        #expect(reversed.status == 3 && reversed.stdout == "GEOLOCATE UNKNOWN - --warning (2h) must be below --critical (1h)\n", "\(reversed)")
        let bare = try geolocate.run(["status", "--check", "-w", "10"])
        #expect(bare.status == 3 && bare.stdout.hasPrefix("GEOLOCATE UNKNOWN - ") && bare.stderr.isEmpty, "\(bare)")
    }
}
