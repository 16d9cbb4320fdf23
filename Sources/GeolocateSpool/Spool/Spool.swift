import Foundation
import GRDB
import GeolocateConfig
import GeolocateModel

/// A record on its way into the spool, with where it goes.
package struct SpoolEntry: Sendable, Equatable {
    /// The record, already limited by the output policy in force (`OutputPolicy.applied(to:)`).
    package var record: GeolocateModel.Record
    /// The one endpoint name or URL the record is for (`trigger --endpoint`/`--post`), or
    /// `nil` for every configured endpoint.
    package var destination: String?

    package init(_ record: GeolocateModel.Record, destination: String? = nil) {
        self.record = record
        self.destination = destination
    }
}

/// The crash-safe record queue in the state directory: SQLite in WAL mode, shared by every
/// geolocate process (tracks, triggers, flushes) through short IMMEDIATE transactions and a
/// busy timeout.
///
/// Each record is kept in typed columns (`SpoolColumns`) under its UUID, with `seq` giving the
/// order it was spooled in; encoders render it for each endpoint when it is sent. `synchronous = FULL` makes every commit durable when it returns, so
/// a power loss loses only what was not yet committed.
package final class Spool: Sendable {
    /// `spool.sqlite` in the state directory.
    package let path: String
    private let storage: Storage

    /// How the spool is open: for writing by the commands that collect and deliver, or for
    /// reading only by status and export.
    private enum Storage: Sendable {
        case writable(DatabasePool)
        case readOnly(ReadOnlyDatabase)
    }

    /// The schema version of a spool opened for reading (`PRAGMA user_version`); that of this
    /// geolocate for one opened for writing, which migrated it.
    package let schemaVersion: Int

    /// Opens (or creates) the spool in `stateDirectory`.
    ///
    /// - Parameter busyTimeout: how long a write waits for another process's write lock
    ///   before it fails: long for one-shot commands, short for track, which keeps its records
    ///   in memory and retries instead of blocking.
    /// - Parameter clock: the wall clock; a spool of schema 6 or earlier gives its records the
    ///   time of the upgrade as when they were spooled.
    /// - Throws: `GeolocateError.stateNotWritable` when it cannot be opened or is not a
    ///   database; `.spoolLocked` (75) when another process holds it locked past `busyTimeout`.
    package init(stateDirectory: String, busyTimeout: Duration = .seconds(30), clock: WallClock) throws {
        path = StateFile.spool.path(in: stateDirectory)
        do {
            guard let directory = try OpenDirectory.open(stateDirectory, create: true) else { throw POSIXError(.ENOENT) }
            // Locations are personal: SQLite gives the -wal and -shm files the database file's
            // mode, and as root its owner, which is the state directory's (the service user's).
            // SQLite opens its files by path without following links, but would take a FIFO,
            // another user's file or a hard link to any file, and as root chown its -wal and
            // -shm to the database's owner: each is judged here first (SPEC §14).
            if let opened = try directory.openFile(StateFile.spool.rawValue, .readWrite, create: true) { close(opened.descriptor) }
            try directory.check(StateFile.spool.companionNames)
            var configuration = Configuration()
            configuration.busyMode = .timeout(busyTimeout.seconds)
            configuration.prepareDatabase { db in
                // The directory's owner may write the file: no function of its schema runs
                // unless SQLite deems it harmless (and no trigger or view is accepted, below).
                try db.execute(sql: "PRAGMA trusted_schema = OFF")
                try db.execute(sql: "PRAGMA synchronous = FULL")
                // Records are appended and read in order, so a small page cache does: SQLite's
                // default of 2 MB per connection was a tenth of track's memory.
                try db.execute(sql: "PRAGMA cache_size = -256")
            }
            let lock = try Spool.lock(in: directory, patience: max(busyTimeout, Spool.minimumLockPatience))
            defer { withExtendedLifetime(lock) {} }
            // Judged again under the lock, just before SQLite opens them.
            try directory.check([StateFile.spool.rawValue] + StateFile.spool.companionNames)
            let database = try DatabasePool(path: NoFollowDatabase.uri(StateFile.spool.rawValue, in: directory), configuration: configuration)
            storage = .writable(database)
            schemaVersion = SpoolColumns.schemaVersion
            let migrator = Spool.migrator(upgradedAt: clock.nowMilliseconds)
            // geolocate makes no trigger or view: one there was put by someone else, and would
            // run its SQL in this process (root's, for the gate) at the next insert.
            if let planted = try database.read({ try String.fetchOne($0, sql: "SELECT name FROM sqlite_master WHERE type IN ('trigger', 'view') LIMIT 1") }) {
                throw GeolocateError.stateFileRefused(path: path, reason: "it holds a trigger or view (\(planted)) that geolocate never makes")
            }
            try database.read(SpoolColumns.checkVersion1)
            if try database.read(migrator.hasBeenSuperseded) {
                throw GeolocateError.stateNotWritable(path: path, reason: "written by a newer geolocate (schema version above \(SpoolColumns.schemaVersion)); use that version")
            }
            try migrator.migrate(database)
            // A migration of a schema rebuilt by hand (or by a test) may leave an earlier number.
            if try database.read({ try Int.fetchOne($0, sql: "PRAGMA user_version") ?? 0 }) < SpoolColumns.schemaVersion {
                try database.write { try $0.execute(sql: "PRAGMA user_version = \(SpoolColumns.schemaVersion)") }
            }
        } catch {
            throw Spool.failure(error, path: path)
        }
    }

    /// How long opening the spool waits for `spool.lock` at the least: another process holds
    /// it only while it opens and migrates the spool (a fraction of a second for a new one),
    /// so track's short busy timeout alone would make two starting at once look locked.
    static let minimumLockPatience: Duration = .seconds(5)

    /// `spool.lock`, waited for at most `patience` seconds: whoever holds it (the service
    /// user, who owns the directory, may hold it for ever) cannot stall a command for ever.
    /// - Throws: `GeolocateError.spoolLocked` (75) when it is still held then.
    private static func lock(in directory: OpenDirectory, patience: Duration) throws -> FileLock {
        let clock = SystemMonotonicClock()
        let deadline = Deadline(milliseconds: patience.milliseconds, clock: clock)
        while true {
            if let lock = try FileLock.ifFree(StateFile.spoolLock.rawValue, in: directory) { return lock }
            if deadline.hasPassed { throw GeolocateError.spoolLocked(path: directory.path(of: StateFile.spoolLock.rawValue)) }
            clock.sleep(for: .milliseconds(10))
        }
    }

    /// Opens the spool of `stateDirectory` for reading only, as status and export do (SPEC
    /// §12): nothing in the directory is created, locked, migrated, chmod-ed or grown, and a
    /// user who may only read it (the group of a 0750 directory and a 0640 spool) can.
    ///
    /// - Returns: `nil` when there is no spool yet (no directory, no file, or an empty file).
    /// - Throws: `GeolocateError.spoolDamaged` (65) for a file that is not a spool or that
    ///   SQLite finds malformed; `.stateUnreadable` (65) when it cannot be read, or was written
    ///   by a newer geolocate. A spool of an older schema opens: `schemaVersion` says which,
    ///   and the reads that need newer columns fail until a command that writes upgrades it.
    package static func openForReading(stateDirectory: String, elapsed: MonotonicClock) throws -> Spool? {
        let path = StateFile.spool.path(in: stateDirectory)
        do {
            guard let database = try ReadOnlyDatabase.open(path, elapsed: elapsed) else { return nil }
            let version = try database.read { db -> Int in
                guard try db.tableExists("records") else {
                    throw ReadOnlyDatabase.Failure.damaged("it has no records table, so it is not a geolocate spool")
                }
                return try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
            }
            guard version <= SpoolColumns.schemaVersion else {
                throw GeolocateError.stateUnreadable(path: path, reason: "written by a newer geolocate (schema version \(version), above \(SpoolColumns.schemaVersion)); use that version")
            }
            return Spool(path: path, readOnly: database, schemaVersion: version)
        } catch {
            throw Spool.failure(error, path: path)
        }
    }

    private init(path: String, readOnly: ReadOnlyDatabase, schemaVersion: Int) {
        self.path = path
        storage = .readOnly(readOnly)
        self.schemaVersion = schemaVersion
    }

    /// The oldest schema status and export read: version 7 has every column they need but
    /// the endpoints' error kind, which is then unknown.
    package static let oldestReadableSchema = 7

    /// The oldest schema export reads: it selects every record column, so only the current
    /// schema has them all (a schema-10 spool lacks 11's `jamming`; naming a fixed older
    /// version let export fail on an SQL error instead of saying how to upgrade).
    package static let oldestExportableSchema = SpoolColumns.schemaVersion

    /// The migrations, in order; `upgradedAt` is the time schema 7 gives the records already
    /// there as when they were spooled.
    private static func migrator(upgradedAt: Int64) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("records") { db in
            try db.execute(sql: """
                CREATE TABLE records (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL,
                    recordedAt INTEGER NOT NULL,
                    body TEXT NOT NULL
                );
                CREATE INDEX records_recordedAt ON records(recordedAt);
                CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
                """)
        }
        registerDeliveryMigration(&migrator)
        // Schema version 2: typed columns instead of each record's Mosaic line.
        migrator.registerMigration("typedRecords") { db in try SpoolColumns.migrateVersion1(db) }
        migrator.registerMigration("signals") { db in try SpoolColumns.addMissingColumns(db, version: 3) }
        migrator.registerMigration("policy") { db in try SpoolColumns.addMissingColumns(db, version: 4) }
        migrator.registerMigration("deviceContext") { db in try SpoolColumns.addMissingColumns(db, version: 5) }
        // Schema version 6: delivered records kept for `spool.keepDelivered`, for export.
        migrator.registerMigration("keptDelivered") { db in
            try db.execute(sql: "CREATE TABLE delivered (seq INTEGER PRIMARY KEY, deliveredAt INTEGER NOT NULL)")
            try db.execute(sql: "CREATE INDEX delivered_deliveredAt ON delivered(deliveredAt)")
            try SpoolColumns.addMissingColumns(db, version: 6)
        }
        // Schema version 7: when each record was spooled (wall clock), which expiry needs
        // beside its fix time so that a replayed log is delivered, not expired; and the
        // expiries of the last day, which status --check warns about. Earlier versions kept no
        // such time: their records count as spooled at the upgrade, so none is expired sooner
        // than spool.maxRetention after it (a record kept too long is better than one lost).
        migrator.registerMigration("spooledAt") { db in
            try db.execute(sql: "ALTER TABLE records ADD COLUMN spooledAt INTEGER NOT NULL DEFAULT 0")
            try db.execute(sql: "UPDATE records SET spooledAt = ?", arguments: [upgradedAt])
            try db.execute(sql: "CREATE INDEX records_spooledAt ON records(spooledAt)")
            try db.execute(sql: "CREATE TABLE expiries (at INTEGER NOT NULL, count INTEGER NOT NULL)")
            try db.execute(sql: "PRAGMA user_version = 7")
        }
        // Schema version 8: whether an endpoint's last error is its configuration's (status
        // --check is CRITICAL at once) or may pass by itself. Earlier errors have none: they
        // count as temporary until the next attempt says.
        migrator.registerMigration("lastErrorKind") { db in
            try db.execute(sql: "ALTER TABLE endpoints ADD COLUMN lastErrorKind TEXT")
            try db.execute(sql: "PRAGMA user_version = 8")
        }
        // Schema version 9: the login hook's subject.
        migrator.registerMigration("subject") { db in try SpoolColumns.addMissingColumns(db, version: 9) }
        // Schema version 10: the receiver's word on its fix (`fixQuality`).
        migrator.registerMigration("fixQuality") { db in try SpoolColumns.addMissingColumns(db, version: 10) }
        // Schema version 11: the receiver's jamming indicator and antenna state (`signals`).
        migrator.registerMigration("receiverHealth") { db in try SpoolColumns.addMissingColumns(db, version: 11) }
        // Schema version 12: the receiver's own verdicts through UBX (OSNMA, spoofing, jamming).
        migrator.registerMigration("receiverVerdicts") { db in try SpoolColumns.addMissingColumns(db, version: 12) }
        return migrator
    }

    /// Adds `records` in one transaction, spooled at `now` (the wall clock, not a replay's
    /// time), then expires what is past `limits` as of `now`.
    ///
    /// Ids are not indexed: they are fresh UUIDs, and a unique index over random keys would cost
    /// more than half the insert rate; delivery is at least once and receivers dedupe by id.
    /// - Returns: how many records were expired.
    @discardableResult
    package func append(_ entries: [SpoolEntry], now: Int64, limits: SpoolLimits) throws -> Int {
        try write { db in
            let insert = try db.cachedStatement(sql: Spool.insertSQL)
            for entry in entries {
                try RecordStatement.execute(insert, record: entry.record, trailing: [.init(entry.destination), .integer(now)])
            }
            return try Spool.expire(db, now: now, limits: limits)
        }
    }

    /// Adds one record, spooled at `now` (the wall clock), and expires what is past `limits`.
    /// - Returns: the record's `seq`, for `remove(seq:)`.
    package func enqueue(_ entry: SpoolEntry, now: Int64, limits: SpoolLimits) throws -> Int64 {
        try write { db in
            try RecordStatement.execute(db.cachedStatement(sql: Spool.insertSQL), record: entry.record,
                                        trailing: [.init(entry.destination), .integer(now)])
            let seq = db.lastInsertedRowID
            _ = try Spool.expire(db, now: now, limits: limits)
            return seq
        }
    }

    // The SQL of each statement is made once, from the column table, and each statement is
    // prepared once per connection (`cachedStatement`); values are always bound, never written
    // into the text.
    private static let insertSQL =
        "INSERT INTO records (\(SpoolColumns.names), destination, spooledAt) VALUES (\(SpoolColumns.placeholders), ?, ?)"

    /// Removes one record, delivered by other means (`trigger --post`), keeping it for
    /// `limits.keepDeliveredMilliseconds`.
    package func remove(seq: Int64, now: Int64, limits: SpoolLimits) throws {
        try write { db in
            try Spool.keepDelivered(db, Spool.keepOneSQL, ["seq": seq], now: now, limits: limits)
            try db.cachedStatement(sql: "DELETE FROM records WHERE seq = ?").execute(arguments: [seq])
        }
    }

    /// The statement that copies the records of `records` that `condition` selects into
    /// `delivered`, delivered at `:deliveredAt`.
    package static func keepSQL(where condition: String) -> String {
        """
        INSERT OR IGNORE INTO delivered (seq, deliveredAt, \(SpoolColumns.names))
        SELECT seq, :deliveredAt, \(SpoolColumns.names) FROM records WHERE \(condition)
        """
    }

    /// Keeps the record `:seq`.
    private static let keepOneSQL = keepSQL(where: "seq = :seq")

    /// Runs `keepSQL` (one of the `keepSQL(where:)` statements, with its `arguments`) when
    /// delivered records are kept, and drops kept ones past `spool.keepDelivered`.
    package static func keepDelivered(_ db: Database, _ keepSQL: String, _ arguments: StatementArguments, now: Int64,
                                      limits: SpoolLimits) throws {
        if limits.keepDeliveredMilliseconds > 0 {
            try db.cachedStatement(sql: keepSQL).execute(arguments: arguments + ["deliveredAt": now])
        }
        try db.cachedStatement(sql: "DELETE FROM delivered WHERE deliveredAt < ?").execute(arguments: [now - limits.keepDeliveredMilliseconds])
    }

    /// Calls `body` with each record, pending or kept after delivery, whose fix time is in the
    /// window (all records when neither bound is given), in spool order or, `eventsFirst`,
    /// events (every record but track's) then track's, each by fix time; a record damaged in
    /// the spool is passed over. One read, row by row (SQLite sorts in its temporary files,
    /// not in the state directory): memory stays flat however many there are.
    package func forEachExportable(since: Int64?, until: Int64?, eventsFirst: Bool = false, _ body: (GeolocateModel.Record) throws -> Void) throws {
        // Not read again when a read-only read saw the file change: the records are already out.
        try readOnce { db in
            let windowed = since != nil || until != nil
            let rows = try Row.fetchCursor(db, sql: Spool.exportSQL[(windowed ? 2 : 0) + (eventsFirst ? 1 : 0)],
                                           arguments: ["since": since ?? .min, "until": until ?? .max, "track": GeolocateModel.Record.trackAction])
            while let row = try rows.next() {
                let (record, damage) = SpoolColumns.checkedRecord(from: row, at: 0)
                if damage == nil { try body(record) }
            }
        }
    }

    /// Export's query of every record, pending or kept, at `(windowed ? 2 : 0) + (eventsFirst
    /// ? 1 : 0)`: all records or those of `:since` to `:until`, in spool order or events first.
    private static let exportSQL = [false, true].flatMap { windowed in
        [false, true].map { eventsFirst in
            """
            SELECT \(SpoolColumns.checkedNames) FROM
                (SELECT seq, \(SpoolColumns.names) FROM records UNION ALL SELECT seq, \(SpoolColumns.names) FROM delivered)
            \(windowed ? "WHERE fixTimestamp BETWEEN :since AND :until" : "")
            ORDER BY \(eventsFirst ? "action = :track, fixTimestamp, seq" : "seq")
            """
        }
    }

    /// Deletes the records past `limits` as of `now` (SPEC §5): older than `spool.maxRetention`
    /// by when they were spooled and by their fix time, a fix time in the future (a receiver
    /// ahead of the clock) or none counting as not old; then the oldest beyond
    /// `spool.maxRecords`. Each expiry is counted, and noted with its time for status.
    private static func expire(_ db: Database, now: Int64, limits: SpoolLimits) throws -> Int {
        try db.cachedStatement(sql: """
            DELETE FROM records WHERE spooledAt < :cutoff
                AND (fixTimestamp IS NULL OR fixTimestamp < :cutoff OR fixTimestamp > :now)
            """).execute(arguments: ["cutoff": now - limits.maxRetentionMilliseconds, "now": now])
        var expired = db.changesCount
        // The span of seq bounds the count from above and costs two index lookups; the exact
        // count, a scan, is needed only when the span is over the limit.
        // (Two queries: SQLite answers a lone MIN or MAX from the index, not both in one.)
        let first = try Int.fetchOne(db.cachedStatement(sql: "SELECT MIN(seq) FROM records"))
        let last = try Int.fetchOne(db.cachedStatement(sql: "SELECT MAX(seq) FROM records"))
        let span = first.flatMap { first in last.map { $0 - first + 1 } } ?? 0
        let count = span > limits.maxRecords ? try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM records") ?? 0 : span
        if count > limits.maxRecords {
            try db.execute(sql: "DELETE FROM records WHERE seq IN (SELECT seq FROM records ORDER BY seq LIMIT ?)",
                           arguments: [count - limits.maxRecords])
            expired += db.changesCount
        }
        if expired > 0 {
            try db.execute(sql: """
                INSERT INTO counters (name, value) VALUES ('expired', ?)
                ON CONFLICT(name) DO UPDATE SET value = value + excluded.value
                """, arguments: [expired])
            try db.execute(sql: "INSERT INTO expiries (at, count) VALUES (?, ?)", arguments: [now, expired])
            try db.execute(sql: "DELETE FROM expiries WHERE at < ?", arguments: [now - Spool.recentExpiryMilliseconds])
        }
        return expired
    }

    /// Expires what is past `limits` as of `now` (flush does, before sending).
    /// - Returns: how many records were expired.
    @discardableResult
    package func expire(now: Int64, limits: SpoolLimits) throws -> Int {
        try write { try Spool.expire($0, now: now, limits: limits) }
    }

    /// How many records wait in the spool.
    package func count() throws -> Int {
        try read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM records") ?? 0 }
    }

    /// The spooled records, oldest first.
    package func records() throws -> [GeolocateModel.Record] {
        try read { db in
            let rows = try Row.fetchCursor(db, sql: Spool.recordsSQL)
            var records: [GeolocateModel.Record] = []
            while let row = try rows.next() { records.append(SpoolColumns.record(from: row, at: 0)) }
            return records
        }
    }

    private static let recordsSQL = "SELECT \(SpoolColumns.names) FROM records ORDER BY seq"

    /// Whether SQLite's own check finds the database file sound.
    package func isIntact() throws -> Bool {
        try read { try String.fetchOne($0, sql: "PRAGMA integrity_check") == "ok" }
    }

    /// How many records were ever expired from this spool.
    package func expiredCount() throws -> Int {
        try read { try Int.fetchOne($0, sql: "SELECT value FROM counters WHERE name = 'expired'") ?? 0 }
    }

    /// How long an expiry counts as recent: status --check warns for a day after records
    /// expired unsent.
    package static let recentExpiryMilliseconds: Int64 = 86_400_000

    /// How many records expired unsent in the `recentExpiryMilliseconds` before `now`.
    package func recentlyExpiredCount(now: Int64) throws -> Int {
        try read {
            try Int.fetchOne($0, sql: "SELECT COALESCE(SUM(count), 0) FROM expiries WHERE at > ?",
                             arguments: [now - Spool.recentExpiryMilliseconds]) ?? 0
        }
    }

    /// Runs `body` in one read transaction. A spool opened for reading is read again, once,
    /// when an immutable read saw the file change (`ReadOnlyDatabase`): `body` must then be
    /// safe to run twice; export's, which streams, uses `readOnce`.
    package func read<T>(_ body: (Database) throws -> T) throws -> T {
        try read(again: true, body)
    }

    /// Runs `body` in one read transaction, never twice.
    /// - Throws: `GeolocateError.spoolChanged` (75) when an immutable read saw the file change.
    package func readOnce<T>(_ body: (Database) throws -> T) throws -> T {
        try read(again: false, body)
    }

    private func read<T>(again: Bool, _ body: (Database) throws -> T) throws -> T {
        do {
            switch storage {
            case .writable(let database): return try database.read(body)
            case .readOnly(let database): return try database.read(again: again, body)
            }
        } catch {
            throw Spool.failure(error, path: path)
        }
    }

    package func write<T>(_ body: (Database) throws -> T) throws -> T {
        guard case .writable(let database) = storage else {
            throw GeolocateError.stateNotWritable(path: path, reason: "it was opened for reading only")
        }
        do { return try database.write(body) } catch {
            throw Spool.failure(error, path: path)
        }
    }

    /// `.spoolLocked` for a lock held by another process, a read-only open's failures as
    /// `.spoolDamaged`, `.stateUnreadable` and `.spoolChanged`, else the 73 that names the file.
    private static func failure(_ error: Error, path: String) -> Error {
        if let error = error as? ReadOnlyDatabase.Failure {
            switch error {
            case .damaged(let reason): return GeolocateError.spoolDamaged(path: path, reason: reason)
            case .unreadable(let reason): return GeolocateError.stateUnreadable(path: path, reason: reason)
            case .changedWhileRead: return GeolocateError.spoolChanged(path: path)
            }
        }
        if let error = error as? DatabaseError {
            if NoFollowDatabase.refusedALink(error) { return NoFollowDatabase.refusal(of: path) }
            if error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED { return GeolocateError.spoolLocked(path: path) }
            return GeolocateError.stateNotWritable(path: path, reason: error.message ?? error.description)
        }
        if let error = error as? GeolocateError { return error }
        return GeolocateError.stateNotWritable(path: path, reason: ErrorText.plain(error))
    }
}
