import Foundation
import GRDB
import GeolocateConfig
import GeolocateModel

/// One spooled record on its way to an endpoint.
package struct PendingRecord: Sendable, Equatable {
    /// The spool's order: delivery follows it, and cursors count in it.
    package var seq: Int64
    package var record: GeolocateModel.Record
    /// Why the stored record cannot be sent as it is (another program wrote a value geolocate
    /// could not have), or `nil`: such a record goes to the dead letters unsent.
    package var damage: String?
}

/// An endpoint's delivery state in the spool.
package struct EndpointState: Sendable, Equatable {
    /// Every record up to this `seq` has been delivered or dead-lettered for the endpoint.
    package var deliveredThrough: Int64 = 0
    /// Records delivered, ever.
    package var sent = 0
    /// Not before this time (epoch ms): a `Retry-After` or the backoff after a failed flush.
    package var retryAt: Int64?
    /// The URL that asked for `retryAt`: an endpoint given a new URL is not held back by
    /// what the old one said. `nil` in states stored before it was kept.
    package var retryURL: String?
    package var lastError: String?
    /// What kind of error `lastError` is; `nil` when stored before schema 8 kept it.
    package var lastErrorKind: EndpointErrorKind?
    package var lastSuccessAt: Int64?
}

/// Whether an endpoint's failure is its own configuration's, which only a person fixes, or
/// one that may pass by itself: what status --check needs to be CRITICAL at once or to wait.
package enum EndpointErrorKind: String, Sendable, Equatable, Codable {
    /// The URL, credentials or certificates are wrong: HTTP 401, 403, 404, 405 or 407, a
    /// redirect, an unusable URL, a TLS failure, a refused connection or an unknown host, a
    /// broker that refuses the login or topic. Nothing gets through until it is fixed.
    case configuration
    /// A timeout, a reset, 408, 429 or 5xx: flush tries again later.
    case temporary
    /// A refused connection or an unknown host met during a login (trigger, the gate): a
    /// server restarting looks the same, so status --check waits the warning age before it is
    /// CRITICAL (a flush meeting it says `configuration`).
    case unreachable
}

extension Spool {
    package static func registerDeliveryMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("delivery") { db in
            try db.execute(sql: """
                CREATE TABLE endpoints (
                    name TEXT PRIMARY KEY,
                    deliveredThrough INTEGER NOT NULL DEFAULT 0,
                    sent INTEGER NOT NULL DEFAULT 0,
                    retryAt INTEGER,
                    lastError TEXT,
                    lastSuccessAt INTEGER
                );
                CREATE TABLE deadLetters (
                    endpoint TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    id TEXT NOT NULL,
                    body TEXT NOT NULL,
                    status INTEGER,
                    reason TEXT NOT NULL,
                    at INTEGER NOT NULL,
                    PRIMARY KEY (endpoint, seq)
                );
                """)
        }
        // A record spooled by `trigger --post URL` or `--endpoint NAME` goes only there.
        migrator.registerMigration("destination") { db in
            try db.execute(sql: "ALTER TABLE records ADD COLUMN destination TEXT")
            try db.execute(sql: "ALTER TABLE deadLetters ADD COLUMN recordedAt INTEGER")
        }
        migrator.registerMigration("retryURL") { db in
            try db.execute(sql: "ALTER TABLE endpoints ADD COLUMN retryURL TEXT")
        }
        // Without it every batch's delete of delivered --post records scanned the whole table:
        // a flush of 100,000 records at batch size 100 took 7.5 s instead of about 2.
        migrator.registerMigration("destinationIndex") { db in
            try db.execute(sql: "CREATE INDEX records_destination ON records(destination) WHERE destination IS NOT NULL")
        }
    }

    /// The records of `endpoint`: those spooled for it alone and, for a configured endpoint
    /// (not a `--post` URL), those for every endpoint.
    private static let forEndpoint = "(destination = :endpoint OR (destination IS NULL AND :endpoint NOT LIKE '%://%'))"

    /// An endpoint row's `deliveredThrough`, or 0 when it is not a `seq` the spool ever gave:
    /// text, negative, or past the AUTOINCREMENT counter (another program's value). Such a
    /// cursor would hide every record from its endpoint, or let them be deleted unsent; from
    /// 0, they are sent twice rather than never.
    static let cursor = """
        CASE WHEN typeof(deliveredThrough) = 'integer'
            AND deliveredThrough BETWEEN 0 AND COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'records'), 0)
        THEN deliveredThrough ELSE 0 END
        """

    /// The endpoint's state; a new endpoint starts before the oldest record.
    package func state(of endpoint: String) throws -> EndpointState {
        try read { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: Spool.stateSQL), arguments: [endpoint]) else {
                return EndpointState()
            }
            return EndpointState(deliveredThrough: row.lenient("cursor") ?? 0, sent: row.lenient("sent") ?? 0,
                                 retryAt: row.lenient("retryAt"), retryURL: row.lenient("retryURL"),
                                 lastError: row.lenient("lastError"),
                                 lastErrorKind: (row.lenient("lastErrorKind") as String?).flatMap(EndpointErrorKind.init(rawValue:)),
                                 lastSuccessAt: row.lenient("lastSuccessAt"))
        }
    }

    private static let stateSQL = "SELECT *, \(cursor) AS cursor FROM endpoints WHERE name = ?"

    /// The `seq` of the newest record, 0 when the spool is empty: a flush delivers up to it, so
    /// records spooled while it runs wait for the next one and a busy track cannot keep it going.
    package func lastSeq() throws -> Int64 {
        try read { try Int64.fetchOne($0.cachedStatement(sql: "SELECT MAX(seq) FROM records")) ?? 0 }
    }

    /// Up to `limit` of `endpoint`'s records after `seq` and up to `horizon`, in order.
    package func records(for endpoint: String, after seq: Int64, through horizon: Int64 = .max, limit: Int) throws -> [PendingRecord] {
        try read { db in
            let rows = try Row.fetchCursor(db.cachedStatement(sql: Spool.pendingSQL),
                                           arguments: ["after": seq, "horizon": horizon, "endpoint": endpoint, "limit": limit])
            var batch: [PendingRecord] = []
            batch.reserveCapacity(min(limit, 10_000))
            while let row = try rows.next() {
                let (record, damage) = SpoolColumns.checkedRecord(from: row, at: 1)
                batch.append(PendingRecord(seq: row[0], record: record, damage: damage))
            }
            return batch
        }
    }

    private static let pendingSQL = """
        SELECT seq, \(SpoolColumns.checkedNames) FROM records
        WHERE seq > :after AND seq <= :horizon AND \(forEndpoint) ORDER BY seq LIMIT :limit
        """

    /// How many records up to `horizon` wait for an endpoint, of `actions` only when given
    /// (`endpoints.NAME.actions`: flush passes the others by).
    package func pendingCount(for endpoint: String, through horizon: Int64 = .max, actions: [String]? = nil) throws -> Int {
        let through = try state(of: endpoint).deliveredThrough
        let actionsJSON = actions.map { "[" + $0.map { "\"\($0)\"" }.joined(separator: ",") + "]" }
        return try read {
            try Int.fetchOne($0.cachedStatement(sql: Spool.pendingCountSQL),
                             arguments: ["after": through, "horizon": horizon, "endpoint": endpoint, "actions": actionsJSON]) ?? 0
        }
    }

    // Action names are plain names (letters, digits, _ and -), so quoting them is enough.
    private static let pendingCountSQL = """
        SELECT COUNT(*) FROM records WHERE seq > :after AND seq <= :horizon AND \(forEndpoint)
        AND (:actions IS NULL OR action IN (SELECT value FROM json_each(:actions)))
        """

    /// The URLs `trigger --post` spooled records for, which every flush also delivers.
    package func postDestinations() throws -> [String] {
        try read { try String.fetchAll($0, sql: "SELECT DISTINCT destination FROM records WHERE destination LIKE '%://%' ORDER BY destination") }
    }

    /// A record an endpoint refused, as `flush --dead-letters` lists it.
    package struct DeadLetterEntry: Sendable, Equatable, Encodable {
        package var endpoint: String
        package var id: String
        package var status: Int?
        package var reason: String
        /// When it was refused, epoch ms.
        package var at: Int64
    }

    /// Dead letters of `endpoint` (of all endpoints when `nil`), oldest first.
    package func deadLetters(for endpoint: String? = nil) throws -> [DeadLetterEntry] {
        try read { db in
            // Lenient reads: a value another program wrote must not trap the listing.
            try Row.fetchAll(db, sql: "SELECT endpoint, id, status, reason, at FROM deadLetters WHERE ? IS NULL OR endpoint = ? ORDER BY at, seq",
                             arguments: [endpoint, endpoint]).map {
                DeadLetterEntry(endpoint: $0.lenient("endpoint") ?? "", id: $0.lenient("id") ?? "",
                                status: ($0.lenient("status") as Int64?).flatMap { Int(exactly: $0) },
                                reason: $0.lenient("reason") ?? "", at: $0.lenient("at") ?? 0)
            }
        }
    }

    /// Puts dead letters back in the queue, each for the endpoint that refused it alone (the
    /// others may have it already): those with `ids`, or all when `ids` is empty. They count as
    /// spooled at `now` (the wall clock), so a requeued record gets its full retention again.
    /// - Returns: how many were requeued.
    /// - Throws: `GeolocateError.usage` naming ids that are not dead letters (nothing is requeued).
    @discardableResult
    package func requeueDeadLetters(ids: [String], now: Int64) throws -> Int {
        try write { db in
            let rows = try Row.fetchAll(db, sql: "SELECT rowid, id FROM deadLetters ORDER BY at, seq")
                .filter { ids.isEmpty || ids.contains($0.lenient("id") ?? "") }
            let missing = Set(ids).subtracting(rows.map { $0.lenient("id") ?? "" })
            guard missing.isEmpty else {
                throw GeolocateError.usage("no dead letter with id \(missing.sorted().joined(separator: ", ")) (list them with: geolocate flush --dead-letters)")
            }
            for row in rows {
                let rowid: Int64? = row.lenient("rowid")
                try db.cachedStatement(sql: Spool.requeueSQL).execute(arguments: [now, rowid])
                try db.cachedStatement(sql: "DELETE FROM deadLetters WHERE rowid = ?").execute(arguments: [rowid])
            }
            return rows.count
        }
    }

    /// Moves the dead letter `rowid` back to the records, for the endpoint that refused it.
    private static let requeueSQL = """
        INSERT INTO records (\(SpoolColumns.names), destination, spooledAt)
        SELECT \(SpoolColumns.names), endpoint, ? FROM deadLetters WHERE rowid = ?
        """

    /// Records that the endpoint has everything through `seq`: `delivered` of them were accepted,
    /// `deadLetters` refused. Then deletes what every endpoint in `allEndpoints` has.
    package func markDelivered(endpoint: String, through seq: Int64, delivered: Int,
                               deadLetters: [(record: PendingRecord, status: Int?, reason: String)],
                               now: Int64, allEndpoints: [String], limits: SpoolLimits = SpoolLimits()) throws {
        try write { db in
            try db.cachedStatement(sql: Spool.deliveredThroughSQL).execute(arguments: [endpoint, seq, delivered, now])
            for letter in deadLetters {
                try db.cachedStatement(sql: Spool.deadLetterSQL)
                    .execute(arguments: [endpoint, letter.status, letter.reason, now, letter.record.seq])
            }
            try Spool.deleteDelivered(db, allEndpoints: allEndpoints, now: now, limits: limits)
        }
    }

    private static let deliveredThroughSQL = """
        INSERT INTO endpoints (name, deliveredThrough, sent, lastSuccessAt) VALUES (?, ?, ?, ?)
        ON CONFLICT(name) DO UPDATE SET deliveredThrough = MAX(\(cursor), excluded.deliveredThrough),
            sent = sent + excluded.sent, lastSuccessAt = excluded.lastSuccessAt, retryAt = NULL, lastError = NULL, lastErrorKind = NULL
        """

    /// Moves the record `seq` to the dead letters of an endpoint as stored, column for column.
    private static let deadLetterSQL = """
        INSERT OR REPLACE INTO deadLetters (endpoint, seq, status, reason, at, \(SpoolColumns.names))
        SELECT ?, seq, ?, ?, ?, \(SpoolColumns.names) FROM records WHERE seq = ?
        """

    /// Records a failed attempt: the error to report and its kind, and when to try `url` again.
    package func markFailed(endpoint: String, url: String, error: String, kind: EndpointErrorKind, retryAt: Int64?) throws {
        try write { db in
            try db.execute(sql: """
                INSERT INTO endpoints (name, retryAt, retryURL, lastError, lastErrorKind) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(name) DO UPDATE SET retryAt = excluded.retryAt, retryURL = excluded.retryURL,
                    lastError = excluded.lastError, lastErrorKind = excluded.lastErrorKind
                """, arguments: [endpoint, retryAt, url, error, kind.rawValue])
        }
    }

    /// Records a delivery outside a flush (`trigger --post`, `--endpoint`, the login gate):
    /// its time is the endpoint's last success, and its last error is cleared.
    package func noteSuccess(endpoint: String, now: Int64) throws {
        try write { db in
            try db.execute(sql: """
                INSERT INTO endpoints (name, lastSuccessAt) VALUES (?, ?)
                ON CONFLICT(name) DO UPDATE SET lastSuccessAt = excluded.lastSuccessAt, lastError = NULL, lastErrorKind = NULL
                """, arguments: [endpoint, now])
        }
    }

    /// Records the error of a send outside a flush (`trigger --post`, `--endpoint`, the login
    /// gate), for `status`, leaving when flush tries again as it was.
    package func noteFailure(endpoint: String, error: String, kind: EndpointErrorKind) throws {
        try write { db in
            try db.execute(sql: """
                INSERT INTO endpoints (name, lastError, lastErrorKind) VALUES (?, ?, ?)
                ON CONFLICT(name) DO UPDATE SET lastError = excluded.lastError, lastErrorKind = excluded.lastErrorKind
                """, arguments: [endpoint, error, kind.rawValue])
        }
    }

    /// Deletes the records every endpoint they are for has delivered or dead-lettered: a record
    /// for one destination when that one has it, any other when all of `allEndpoints` have it.
    private static func deleteDelivered(_ db: Database, allEndpoints: [String], now: Int64, limits: SpoolLimits) throws {
        // A flush runs these once a batch: each is prepared once (`cachedStatement`).
        try keepDelivered(db, keepForTheirDestinationSQL, [:], now: now, limits: limits)
        try db.cachedStatement(sql: deleteForTheirDestinationSQL).execute()
        guard !allEndpoints.isEmpty else { return }
        var lowest = Int64.max
        for name in allEndpoints {
            let through = try Int64.fetchOne(db.cachedStatement(sql: cursorSQL), arguments: [name]) ?? 0
            lowest = min(lowest, through)
        }
        try keepDelivered(db, keepForEveryEndpointSQL, ["through": lowest], now: now, limits: limits)
        try db.cachedStatement(sql: "DELETE FROM records WHERE destination IS NULL AND seq <= ?").execute(arguments: [lowest])
    }

    /// The records for one destination that it has delivered or dead-lettered.
    private static let forTheirDestination = """
        destination IS NOT NULL
            AND seq <= COALESCE((SELECT \(cursor) FROM endpoints WHERE name = records.destination), 0)
        """
    private static let keepForTheirDestinationSQL = keepSQL(where: forTheirDestination)
    private static let deleteForTheirDestinationSQL = "DELETE FROM records WHERE \(forTheirDestination)"
    /// The records for every endpoint up to `:through`, the lowest of their cursors.
    private static let keepForEveryEndpointSQL = keepSQL(where: "destination IS NULL AND seq <= :through")
    private static let cursorSQL = "SELECT \(cursor) FROM endpoints WHERE name = ?"
}
