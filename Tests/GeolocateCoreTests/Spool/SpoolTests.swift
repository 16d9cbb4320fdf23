import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import class GRDB.Database
import class GRDB.DatabaseQueue
import class GRDB.Row
import struct GRDB.DatabaseValue
import Testing
import NMEA

/// The SQLite spool on real files: appends, dedupe, retention, group commit, concurrent writers.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct SpoolTests {
    let state = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)").path
    static let now: Int64 = 1_795_348_800_000

    func record(ageMilliseconds: Int64) -> Record {
        let fix = Fix(timestamp: Self.now - ageMilliseconds, latitude: 53, longitude: -6, mode: .threeD, provider: .gpsd)
        return Record(action: "track", triggeredAt: Self.now, requestedMode: "force-current", collectionMode: "force-current",
                      fix: fix, permissions: [.fine], origin: .current, fallbackReason: nil, errorCode: .none, context: .regular)
    }

    @Test func appendKeepsOrderAcrossTransactionsAndOpenings() throws {
        let spool = try Spool(stateDirectory: state, clock: SystemClock())
        let records = (0..<5).map { _ in record(ageMilliseconds: 1000) }
        try spool.append(records[0..<2].map { SpoolEntry($0) }, now: Self.now, limits: SpoolLimits())
        try spool.append(records[2...].map { SpoolEntry($0) }, now: Self.now, limits: SpoolLimits())
        #expect(try spool.count() == 5)
        #expect(try spool.mosaicLines() == records.map { RecordFormat.mosaic.line($0, policy: .unrestricted) })
        #expect(try Spool(stateDirectory: state, clock: SystemClock()).count() == 5)
    }

    /// A spool of schema version 2 (typed columns, no signals) gains the columns of versions
    /// 3 to 5; its records read as they were, without signals, and new records keep theirs.
    @Test func aVersion2SpoolGainsSignals() throws {
        let old = record(ageMilliseconds: 1000)
        _ = try Spool(stateDirectory: state, clock: SystemClock()).append([SpoolEntry(old)], now: Self.now, limits: SpoolLimits())
        let laterColumns = ["signalFlags", "previousTimestamp", "previousDistance", "previousCountry", "impliedSpeed", "clockSkewMs",
                            "satellitesUsed", "satellitesMeasured", "cn0Mean", "cn0StdDev", "signalReasons",
                            "policyDecision", "policyZone", "policyRule", "policyCountry", "policyBoundaryDistance",
                            "isCharging", "wifiSsid", "wifiBssid", "carrierName"]
        try DatabaseQueue(path: state + "/spool.sqlite").write { db in
            for table in ["records", "deadLetters"] {
                for column in laterColumns { try db.execute(sql: "ALTER TABLE \(table) DROP COLUMN \(column)") }
            }
            try db.execute(sql: "DROP TABLE delivered")
            try Self.undoVersion7(db)
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier IN ('signals', 'policy', 'deviceContext', 'keptDelivered'); PRAGMA user_version = 2")
        }
        var new = record(ageMilliseconds: 0)
        var signals = Signals()
        signals.previous = .init(recordTimestamp: Self.now - 1000, distance: 12.5, countryCode: "IE")
        signals.impliedSpeed = 12.5
        signals.replayed = true
        signals.satellites = SatelliteSummary(used: 9, measured: 8, cn0Mean: 41.2, cn0StdDev: 5.8)
        signals.reasons = ["replayed: the fix comes from an NMEA replay"]
        new.signals = signals
        let spool = try Spool(stateDirectory: state, clock: SystemClock())
        _ = try spool.append([SpoolEntry(new)], now: Self.now, limits: SpoolLimits())
        let (version, kept) = try DatabaseQueue(path: state + "/spool.sqlite").read {
            (try Int.fetchOne($0, sql: "PRAGMA user_version"), try $0.columns(in: "delivered").map(\.name))
        }
        #expect(version == SpoolColumns.schemaVersion)
        #expect(kept.starts(with: ["seq", "deliveredAt"]) && kept.contains("carrierName"))
        #expect(try spool.records().map(\.signals) == [nil, signals])
    }

    /// Export selects every record column, so a spool of the schema before this one is refused
    /// with the command that upgrades it, never an SQL error (found by the hostile pass: a
    /// schema-10 spool failed on `no such column: jamming`).
    @Test func exportAsksForTheUpgradeOfAnEarlierSchema() throws {
        let spool = try Spool(stateDirectory: state, clock: SystemClock())
        _ = try spool.append([SpoolEntry(record(ageMilliseconds: 0))], now: Self.now, limits: SpoolLimits())
        try DatabaseQueue(path: state + "/spool.sqlite").write { db in
            for table in ["records", "deadLetters", "delivered"] {
                for column in ["jamming", "antenna", "antennaPower", "gnssAuthenticated", "receiverSpoofing", "receiverJamming",
                               "osnmaReplay", "osnmaStatus", "authenticatedSatellites"] {
                    try db.execute(sql: "ALTER TABLE \(table) DROP COLUMN \(column)")
                }
            }
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier IN ('receiverHealth', 'receiverVerdicts'); PRAGMA user_version = 10")
        }
        #expect {
            _ = try Exporter.spoolInput(stateDirectory: state, elapsed: SystemMonotonicClock())
        } throws: { "\($0)".contains("schema version 10") && "\($0)".contains("such as geolocate flush --dry-run, upgrades it") }
        _ = try Spool(stateDirectory: state, clock: SystemClock())
        guard case .spool(let upgraded) = try Exporter.spoolInput(stateDirectory: state, elapsed: SystemMonotonicClock()) else {
            Issue.record("no spool after the upgrade")
            return
        }
        #expect(upgraded.schemaVersion == SpoolColumns.schemaVersion)
    }

    /// A spool written by an earlier version (`Fixtures/spool-v1`, see its README) opens
    /// with every record, destination and cursor kept: the baseline the typed-records
    /// migration must keep passing.
    @Test func aSpoolFromAnEarlierVersionKeepsEverything() throws {
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: TestPaths.fixture("spool-v1/spool.sqlite"),
                                         to: URL(fileURLWithPath: state + "/spool.sqlite"))
        let expected = try String(contentsOf: TestPaths.fixture("spool-v1/records.ndjson"), encoding: .utf8)
            .split(separator: "\n").map(String.init)
        let spool = try Spool(stateDirectory: state, clock: SystemClock())
        #expect(try spool.mosaicLines() == expected)
        #expect(try spool.pendingCount(for: "primary") == 12)
        let post = "http://127.0.0.1:1/post?token=T"
        #expect(try spool.postDestinations() == [post])
        #expect(try spool.pendingCount(for: post) == 1)
        #expect(try spool.state(of: "primary").lastError == "connection refused after 4 attempts")
    }

    /// The version-1 fixture, copied into the state directory and changed first with `sql`,
    /// statements of the kind version 1 ran (its schema has a `body` column).
    func version1Spool(changedBy sql: String = "") throws -> [String] {
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: TestPaths.fixture("spool-v1/spool.sqlite"),
                                         to: URL(fileURLWithPath: state + "/spool.sqlite"))
        if !sql.isEmpty { try DatabaseQueue(path: state + "/spool.sqlite").write { try $0.execute(sql: sql) } }
        return try String(contentsOf: TestPaths.fixture("spool-v1/records.ndjson"), encoding: .utf8)
            .split(separator: "\n").map(String.init)
    }

    /// Dead letters and a delivered (deleted) record, as version 1 kept them: the dead letter
    /// comes back whole (the earliest versions kept no time beside it), and new records never reuse the `seq` of a deleted one, which an
    /// endpoint's cursor has already passed.
    @Test func aVersion1SpoolKeepsItsDeadLettersAndItsSequence() throws {
        let lines = try version1Spool(changedBy: """
            DELETE FROM records WHERE seq = 13;
            UPDATE endpoints SET deliveredThrough = 13 WHERE name LIKE 'http%';
            INSERT INTO deadLetters (endpoint, seq, id, body, status, reason, at, recordedAt)
                SELECT 'primary', seq, id, body, 422, 'HTTP 422', 1795541300000, NULL FROM records WHERE seq = 1;
            UPDATE endpoints SET deliveredThrough = 1 WHERE name = 'primary';
            """)
        let spool = try Spool(stateDirectory: state, clock: SystemClock())
        let columns = try DatabaseQueue(path: state + "/spool.sqlite").read { db in
            (try Int.fetchOne(db, sql: "PRAGMA user_version"), try db.columns(in: "records").map(\.name))
        }
        #expect(columns.0 == SpoolColumns.schemaVersion && !columns.1.contains("body") && columns.1.contains("latitude") && columns.1.contains("signalFlags"))
        #expect(try spool.mosaicLines() == Array(lines[0..<12]))
        #expect(try spool.pendingCount(for: "primary") == 11)
        let letters = try spool.deadLetters(for: "primary")
        #expect(letters.map(\.status) == [422] && letters.first?.id == lines[0].split(separator: "\"")[3].description)
        #expect(try spool.requeueDeadLetters(ids: [], now: Self.now) == 1)
        let requeued = try spool.records(for: "primary", after: 12, limit: 10)
        #expect(requeued.map(\.seq) == [14])
        #expect(requeued.map { RecordFormat.mosaic.line($0.record, policy: .unrestricted) } == [lines[0]])
    }

    /// A line the migration cannot read stops it with exit 73 naming the spool, and the spool
    /// stays as version 1 left it, for that version to deliver.
    @Test func anUnreadableVersion1RecordLeavesTheSpoolAsItWas() throws {
        _ = try version1Spool(changedBy: #"UPDATE records SET body = '{"id":"x","action":"track"}' WHERE seq = 5"#)
        #expect {
            _ = try Spool(stateDirectory: state, clock: SystemClock())
        } throws: { error in
            "\(error)".contains("cannot be read") && (error as? GeolocateError)?.exitStatus == .cannotCreate
        }
        let left = try DatabaseQueue(path: state + "/spool.sqlite").read { db in
            (try db.columns(in: "records").map(\.name), try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations"))
        }
        // Not even the migrations before the conversion ran: version 1 still knows them all.
        #expect(left.0 == ["seq", "id", "recordedAt", "body", "destination"])
        #expect(left.1 == ["records", "delivery", "destination", "retryURL"])
    }

    @Test func aSpoolFromANewerVersionIsRefused() throws {
        _ = try Spool(stateDirectory: state, clock: SystemClock())
        try DatabaseQueue(path: state + "/spool.sqlite").write {
            try $0.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('fromTheFuture')")
        }
        #expect {
            _ = try Spool(stateDirectory: state, clock: SystemClock())
        } throws: { "\($0)".contains("newer geolocate") }
    }

    /// Every field, withheld ones left out, reads back as it was written, in every format.
    @Test func everyFieldSurvivesTheSpool() throws {
        var full = record(ageMilliseconds: 2000)
        full.fix?.altitudeHAE = 79.25
        full.fix?.altitudeMSL = 24.5
        full.fix?.speed = 11.125
        full.fix?.course = 66.1
        full.fix?.horizontalAccuracy = 2.3
        full.fix?.verticalAccuracy = 2.9
        full.fix?.quality = .rtkFloat
        full.address = Address(countryCode: "IE", district: "Leinster", city: "Maynooth", street: "Main \"Street\"", streetNumber: "1")
        full.device = DeviceInfo(id: "5c1caaf7-f436-48e5-bbc7-16021bba58ab", model: "Kiosk", osVersion: "Debian 12")
        full.errorCode = .geocodingFailed
        full.fallbackReason = .timeout
        full.device?.context = DeviceContext(isCharging: true, wifiSsid: "eduroam", wifiBssid: "a4:2b:b0:11:22:33", carrierName: "Three")
        full.subject = Subject(user: "alice", service: "sshd", remoteHost: "10.1.2.3", tty: "ssh")
        var signals = Signals()
        (signals.jumped, signals.countryChanged, signals.stale, signals.inaccurate) = (true, true, true, true)
        (signals.replayed, signals.spoofingSuspected, signals.clockSkewed, signals.estimatedFix) = (true, true, true, true)
        signals.systemClockSynchronized = true
        (signals.jamming, signals.jammed, signals.antenna, signals.antennaFault) = (180, true, .short, true)
        signals.antennaPower = .off
        (signals.gnssAuthenticated, signals.receiverSpoofing, signals.receiverJamming, signals.osnmaReplay) = (false, true, true, false)
        (signals.osnmaStatus, signals.authenticatedSatellites) = (.operational, 7)
        signals.previous = .init(recordTimestamp: Self.now - 60_000, distance: 1520.75, countryCode: "GB")
        signals.impliedSpeed = 25.5
        signals.clockSkewMilliseconds = -7_250
        signals.satellites = SatelliteSummary(used: 7, measured: 9, cn0Mean: 41.25, cn0StdDev: 1.5)
        signals.reasons = ["jumped: 1520 m in 60 s", "countryChanged: GB to IE"]
        full.signals = signals
        full.policy = PolicyResult(decision: .deny, zone: "lab", rule: .insideDenyZone, country: "IE", boundaryDistance: 12.5)
        var fallback = full
        fallback.subject = Subject(user: "bob")
        fallback.origin = .lastKnown
        fallback.fallbackReason = .timeout
        fallback.context = .visitExit
        var noLocation = record(ageMilliseconds: 0)
        noLocation.fix = nil
        noLocation.permissions = []
        noLocation.errorCode = .permissionDenied
        let city = OutputPolicy(attributes: LocationPrecision.city.attributes, fields: {
            var fields = RecordFields()
            fields.deviceModel = false
            return fields
        }())
        let records = [full, fallback, noLocation, city.applied(to: full)]
        let spool = try Spool(stateDirectory: state, clock: SystemClock())
        try spool.append(records.map { SpoolEntry($0) }, now: Self.now, limits: SpoolLimits())
        let stored = try spool.records()
        #expect(Array(stored.prefix(3)) == Array(records.prefix(3)))
        for format in RecordFormat.allCases {
            #expect(stored.map { format.line($0, policy: .unrestricted) } == records.map { format.line($0, policy: .unrestricted) })
        }
        // Every column of the table holds a value of `full`: a column added to the table is
        // added here too, or this fails naming it.
        let columns = SpoolColumns.definitions.map(\.name)
        let empty = try DatabaseQueue(path: state + "/spool.sqlite").read { db in
            let row = try #require(try Row.fetchOne(db, sql: "SELECT \(SpoolColumns.names) FROM records WHERE seq = 1"))
            return columns.filter { (row[$0] as DatabaseValue).isNull }
        }
        #expect(empty == [], "columns the test leaves empty: \(empty)")
        // What the city level withholds is not in the file at all.
        let kept = try DatabaseQueue(path: state + "/spool.sqlite").read {
            try Row.fetchOne($0, sql: "SELECT latitude, longitude, speed, street, deviceModel FROM records WHERE seq = 4")
        }
        #expect(kept.map { row in (0..<5).allSatisfy { (row[$0] as DatabaseValue).isNull } } == true)
    }

    @Test func theFileIsPrivateAndInWALMode() throws {
        _ = try Spool(stateDirectory: state, clock: SystemClock())
        var info = stat()
        #expect(stat(state + "/spool.sqlite", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        // SQLite's header: bytes 18 and 19 are 2 for a WAL database.
        let header = try #require(FileManager.default.contents(atPath: state + "/spool.sqlite"))
        #expect(header.count >= 100 && header[18] == 2 && header[19] == 2)
    }

    @Test func recordsPastRetentionOrBeyondTheLimitAreExpiredAndCounted() throws {
        let spool = try Spool(stateDirectory: state, clock: SystemClock())
        let limits = SpoolLimits(maxRetentionMilliseconds: 86_400_000, maxRecords: 3)
        let old = record(ageMilliseconds: 2 * 86_400_000)
        // Spooled two days ago, with a fix as old.
        try spool.append([SpoolEntry(old)], now: Self.now - 2 * 86_400_000, limits: limits)
        let fresh = (0..<4).map { record(ageMilliseconds: Int64(4 - $0) * 1000) }
        let expired = try spool.append(fresh.map { SpoolEntry($0) }, now: Self.now, limits: limits)
        #expect(expired == 2)  // the old one, then the oldest fresh one beyond 3 records
        #expect(try spool.count() == 3)
        #expect(try spool.expiredCount() == 2)
        #expect(try spool.recentlyExpiredCount(now: Self.now) == 2)
        #expect(try spool.recentlyExpiredCount(now: Self.now + Spool.recentExpiryMilliseconds) == 0)
        #expect(try spool.mosaicLines() == fresh.suffix(3).map { RecordFormat.mosaic.line($0, policy: .unrestricted) })
    }

    /// SPEC §5: a record expires only when it is older than spool.maxRetention by both its
    /// times, when it was spooled and (unless in the future) its fix's.
    @Test(arguments: [
        // (spooled days ago, fix days ago (negative: ahead of the clock), expired)
        (0.0, 700.0, false),  // a two-year-old log replayed just now
        (11.0, 1.0, false),   // spooled while the clock ran weeks behind, recent fix
        (11.0, 11.0, true),
        (11.0, -3.0, true),   // a fix in the future counts for nothing
        (9.0, 700.0, false),
    ])
    func retentionCountsFromBothTimes(spooledDaysAgo: Double, fixDaysAgo: Double, expired: Bool) throws {
        let spool = try Spool(stateDirectory: state, clock: SystemClock())
        let day = 86_400_000.0
        let limits = SpoolLimits(maxRetentionMilliseconds: 10 * 86_400_000)
        try spool.append([SpoolEntry(record(ageMilliseconds: Int64(fixDaysAgo * day)))], now: Self.now - Int64(spooledDaysAgo * day), limits: limits)
        #expect(try spool.expire(now: Self.now, limits: limits) == (expired ? 1 : 0))
        #expect(try spool.count() == (expired ? 0 : 1))
    }

    /// Removes what schema version 7 added, making the spool one of version 6.
    static func undoVersion7(_ db: Database) throws {
        try db.execute(sql: "DROP INDEX records_spooledAt; ALTER TABLE records DROP COLUMN spooledAt; DROP TABLE expiries")
        try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'spooledAt'; PRAGMA user_version = 6")
    }

    /// A spool of version 6 keeps its records, which count as spooled at the upgrade: none is
    /// expired by its old fix time alone.
    @Test func aVersion6SpoolKeepsItsRecordsAsSpooledAtTheUpgrade() throws {
        let limits = SpoolLimits(maxRetentionMilliseconds: 10 * 86_400_000)
        let old = (0..<3).map { _ in record(ageMilliseconds: 30 * 86_400_000) }
        try Spool(stateDirectory: state, clock: SystemClock()).append(old.map { SpoolEntry($0) }, now: Self.now - 30 * 86_400_000, limits: limits)
        try DatabaseQueue(path: state + "/spool.sqlite").write { try Self.undoVersion7($0) }
        let spool = try Spool(stateDirectory: state, clock: FixedClock(Self.now))
        let (version, spooledAt) = try DatabaseQueue(path: state + "/spool.sqlite").read {
            (try Int.fetchOne($0, sql: "PRAGMA user_version"), try Int64.fetchAll($0, sql: "SELECT spooledAt FROM records"))
        }
        #expect(version == SpoolColumns.schemaVersion && spooledAt == [Self.now, Self.now, Self.now])
        #expect(try spool.expire(now: Self.now + 9 * 86_400_000, limits: limits) == 0)
        #expect(try spool.mosaicLines() == old.map { RecordFormat.mosaic.line($0, policy: .unrestricted) })
        #expect(try spool.expire(now: Self.now + 11 * 86_400_000, limits: limits) == 3)
    }

    @Test func groupCommitCommitsAtOnceThenOncePerWindow() throws {
        let elapsed = ManualMonotonicClock()
        let writer = SpoolWriter(spool: try Spool(stateDirectory: state, clock: SystemClock()), limits: SpoolLimits(),
                                 window: .seconds(60), elapsed: elapsed)
        let reader = try Spool(stateDirectory: state, clock: SystemClock())
        try writer.add(SpoolEntry(record(ageMilliseconds: 0)), now: Self.now)
        #expect(try reader.count() == 1)  // nothing committed for a while: at once
        try writer.add(SpoolEntry(record(ageMilliseconds: 0)), now: Self.now)
        try writer.add(SpoolEntry(record(ageMilliseconds: 0)), now: Self.now)
        elapsed.advance(seconds: 59)
        try writer.tick(now: Self.now)
        #expect(try reader.count() == 1)  // within the window: pending
        elapsed.advance(seconds: 1)
        try writer.tick(now: Self.now)
        #expect(try reader.count() == 3)  // the window has passed
        try writer.add(SpoolEntry(record(ageMilliseconds: 0)), now: Self.now)
        try writer.flush(now: Self.now)
        #expect(try reader.count() == 4)
        #expect(writer.committed == 4)
    }

    @Test func concurrentWritersOnOneFileLoseNothing() throws {
        let state = self.state
        _ = try Spool(stateDirectory: state, clock: SystemClock())
        let errors = ErrorBox()
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            do {
                let spool = try Spool(stateDirectory: state, clock: SystemClock())
                for _ in 0..<50 {
                    try spool.append((0..<20).map { _ in SpoolEntry(record(ageMilliseconds: Int64(worker))) }, now: Self.now, limits: SpoolLimits())
                }
            } catch {
                errors.add(error)
            }
        }
        #expect(errors.all.isEmpty, "\(errors.all)")
        #expect(try Spool(stateDirectory: state, clock: SystemClock()).count() == 4 * 50 * 20)
    }

    @Test func openingANewSpoolFromSeveralPlacesAtOnceMigratesItOnce() throws {
        let errors = ErrorBox()
        for round in 0..<10 {
            let state = self.state + "-\(round)"
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                do { _ = try Spool(stateDirectory: state, clock: SystemClock()) } catch { errors.add(error) }
            }
        }
        #expect(errors.all.isEmpty, "\(errors.all)")
    }

    /// Dead letters another program damaged (text in a number, a BLOB id, a number past
    /// Int64) are listed and requeued, where reading them used to trap (exit 132).
    @Test func damagedDeadLettersAreListedAndRequeued() throws {
        let spool = try Spool(stateDirectory: state, clock: SystemClock())
        try spool.append([SpoolEntry(record(ageMilliseconds: 0)), SpoolEntry(record(ageMilliseconds: 0))], now: Self.now, limits: SpoolLimits())
        let pending = try spool.records(for: "primary", after: 0, limit: 10)
        try spool.markDelivered(endpoint: "primary", through: pending[1].seq, delivered: 0,
                                deadLetters: pending.map { ($0, 400, "HTTP 400") }, now: Self.now, allEndpoints: ["primary"])
        try DatabaseQueue(path: state + "/spool.sqlite").write {
            try $0.execute(sql: "UPDATE deadLetters SET status = 'abc', at = 'yesterday' WHERE seq = ?", arguments: [pending[0].seq])
            try $0.execute(sql: "UPDATE deadLetters SET id = x'00ff', status = 99999999999999999999, at = 1e300 WHERE seq = ?",
                           arguments: [pending[1].seq])
        }
        let letters = try spool.deadLetters()
        #expect(letters.count == 2)
        #expect(letters.allSatisfy { $0.status == nil })
        #expect(letters.contains { $0.id == pending[0].record.id })
        #expect(try spool.requeueDeadLetters(ids: [], now: Self.now) == 2)
        #expect(try spool.deadLetters().isEmpty)
        #expect(try spool.count() == 2)
    }

    @Test func aFileThatIsNotADatabaseIsAClearError() throws {
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try Data(repeating: 0x42, count: 4096).write(to: URL(fileURLWithPath: state + "/spool.sqlite"))
        #expect {
            try Spool(stateDirectory: state, clock: SystemClock())
        } throws: { error in
            guard let error = error as? GeolocateError, error.isStateNotWritable, let path = error.path, let reason = error.reason else { return false }
            return path.hasSuffix("spool.sqlite") && reason.contains("not a database")
        }
    }
}

/// Errors collected from several threads.
final class ErrorBox: @unchecked Sendable {
    private let lock = NSLock()
    private var errors: [Error] = []

    func add(_ error: Error) {
        lock.lock()
        errors.append(error)
        lock.unlock()
    }

    var all: [Error] {
        lock.lock()
        defer { lock.unlock() }
        return errors
    }
}
