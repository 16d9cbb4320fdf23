import Foundation
import Testing

/// Retention through the binary (SPEC §5): a record expires only when it is older than
/// `spool.maxRetention` both since it was spooled and by its fix time, says so as a warning,
/// and leaves `status --check` at WARNING for a day. The spool's times are set with the
/// sqlite3 program, not geolocate, and the logs come from nmea-gen.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct ExpiryEndToEndTests {
    let geolocate = GeolocateProcess()
    static let day: Int64 = 86_400_000

    var spoolPath: String { geolocate.stateDirectory + "/spool.sqlite" }

    func set(_ key: String, _ value: String) throws {
        let result = try geolocate.run(["config", "set", key, value])
        try #require(result.status == 0, "\(result.stderr)")
    }

    /// Spools a generated log of `epochs` fixes from `start` (ISO 8601) and returns the ids
    /// track printed, in order.
    func spool(start: String, epochs: Int, seed: Int) throws -> [String] {
        try spoolSaying(start: start, epochs: epochs, seed: seed).ids
    }

    /// `spool`, with what track said on stderr.
    func spoolSaying(start: String, epochs: Int, seed: Int) throws -> (ids: [String], stderr: String) {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let log = geolocate.home.appendingPathComponent("log-\(seed).nmea").path
        try Tool.generateNMEA(["--epochs", String(epochs), "--seed", String(seed), "--start", start, "--out", log])
        let result = try geolocate.run(["track", "--replay", log, "--every-fix", "--stdout", "--permission", "fine"])
        try #require(result.status == 0, "\(result.stderr)")
        let ids = result.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["id"] as? String
        }
        try #require(ids.count == epochs, "one record per generated epoch")
        return (ids, result.stderr)
    }

    func iso(hoursAgo hours: Double) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSinceNow: -hours * 3600))
    }

    func sqlite(_ sql: String) throws -> String {
        try Tool.run(["sqlite3", spoolPath, sql]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func flush() throws -> (status: Int32, report: [String: Any], stderr: String) {
        let result = try geolocate.run(["flush", "--json"])
        let document = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let endpoint = (document?["endpoints"] as? [[String: Any]])?.first ?? [:]
        return (result.status, endpoint, result.stderr)
    }

    /// A log from 2024 replayed today is spooled today: flush delivers every record.
    @Test func aReplayedLogFrom2024IsDelivered() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try set("endpoints.main.url", collector.url("/in"))
        let ids = try spool(start: "2024-03-01T10:00:00Z", epochs: 30, seed: 11)
        let (status, report, stderr) = try flush()
        #expect(status == 0, "\(stderr)")
        #expect(collector.acceptedIDs("/in") == ids)
        #expect(report["sent"] as? Int == 30 && report["expired"] as? Int == 0, "\(report)")
        #expect(!stderr.contains("expired"), "\(stderr)")
    }

    /// Records spooled 11 days ago (the spool's time moved back with sqlite3) expire when
    /// their fix is as old, and are delivered when their fix is recent (a clock that was
    /// behind when they were spooled). Expiry is a warning, counted by flush --json, and
    /// status --check is WARNING for the next 24 h.
    @Test func recordsOldByBothTimesExpireWithAWarning() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try set("endpoints.main.url", collector.url("/in"))
        try set("source", "nmea:" + GeolocateProcess.example("kiosk-gnss.nmea"))
        let old = try spool(start: iso(hoursAgo: 20 * 24), epochs: 30, seed: 12)
        let recent = try spool(start: iso(hoursAgo: 1), epochs: 10, seed: 13)
        // Both batches spooled 11 days ago, past the default spool.maxRetention of 10 days.
        _ = try sqlite("UPDATE records SET spooledAt = spooledAt - 11 * \(Self.day)")
        try #require(try sqlite("SELECT COUNT(*) FROM records") == "40")
        let (status, report, stderr) = try flush()
        #expect(status == 0, "\(stderr)")
        #expect(collector.acceptedIDs("/in") == recent)
        #expect(!collector.acceptedIDs("/in").contains { old.contains($0) })
        #expect(report["sent"] as? Int == 10 && report["expired"] as? Int == 30, "\(report)")
        let warning = stderr.split(separator: "\n").filter { $0.contains("expired unsent") }
        #expect(warning.count == 1 && warning[0].hasPrefix("geolocate: warning: 30 records expired unsent"), "\(stderr)")
        let check = try geolocate.run(["status", "--check"])
        #expect(check.status == 1, "\(check.stdout)")
        #expect(check.stdout.hasPrefix("GEOLOCATE WARNING - 30 records expired unsent in the last 24h"), "\(check.stdout)")
        let json = try geolocate.run(["status", "--json"]).json()
        #expect((json["spool"] as? [String: Any])?["expiredLast24h"] as? Int == 30, "\(json)")
        // A day later the warning is over: the expiry's time moved back with sqlite3.
        _ = try sqlite("UPDATE expiries SET at = at - \(Self.day) - 1000")
        let later = try geolocate.run(["status", "--check"])
        #expect(later.status == 0 && later.stdout.hasPrefix("GEOLOCATE OK"), "\(later.stdout)")
    }

    /// track expires old records as it commits new ones, and says so as flush does; status
    /// --check then warns.
    @Test func trackSaysWhatItsCommitsExpire() throws {
        try set("source", "nmea:" + GeolocateProcess.example("kiosk-gnss.nmea"))
        _ = try spool(start: iso(hoursAgo: 20 * 24), epochs: 30, seed: 15)
        _ = try sqlite("UPDATE records SET spooledAt = spooledAt - 11 * \(Self.day)")
        let (ids, stderr) = try spoolSaying(start: iso(hoursAgo: 1), epochs: 5, seed: 16)
        let warning = stderr.split(separator: "\n").filter { $0.contains("expired unsent") }
        #expect(warning.count == 1 && warning[0].hasPrefix("geolocate: warning: 30 records expired unsent"), "\(stderr)")
        #expect(try sqlite("SELECT id FROM records ORDER BY seq").split(separator: "\n").map(String.init) == ids)
        #expect(try geolocate.run(["status", "--check"]).status == 1)
    }

    /// A spool of schema version 6 (made here from a new one with sqlite3: the column, index and
    /// table of version 7 dropped) keeps its records through the upgrade: they count as spooled
    /// at the upgrade, so 20-day-old fixes are delivered, not expired.
    @Test func aVersion6SpoolKeepsItsRecordsThroughTheUpgrade() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try set("endpoints.main.url", collector.url("/in"))
        let ids = try spool(start: iso(hoursAgo: 20 * 24), epochs: 30, seed: 14)
        _ = try sqlite("""
            DROP INDEX records_spooledAt; ALTER TABLE records DROP COLUMN spooledAt; DROP TABLE expiries;
            DELETE FROM grdb_migrations WHERE identifier = 'spooledAt'; PRAGMA user_version = 6;
            """)
        try #require(try sqlite("PRAGMA user_version") == "6")
        let (status, report, stderr) = try flush()
        #expect(status == 0, "\(stderr)")
        #expect(collector.acceptedIDs("/in") == ids)
        #expect(report["expired"] as? Int == 0, "\(report)")
        #expect(try sqlite("PRAGMA user_version") == "12")
    }
}
