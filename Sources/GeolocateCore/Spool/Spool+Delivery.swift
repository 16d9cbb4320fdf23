import Foundation
import GRDB

/// One spooled record on its way to an endpoint.
public struct PendingRecord: Sendable, Equatable {
    /// The spool's order: delivery follows it, and cursors count in it.
    public var seq: Int64
    public var id: String
    public var body: String
}

/// An endpoint's delivery state in the spool.
public struct EndpointState: Sendable, Equatable {
    /// Every record up to this `seq` has been delivered or dead-lettered for the endpoint.
    public var deliveredThrough: Int64 = 0
    /// Records delivered, ever.
    public var sent = 0
    /// Not before this time (epoch ms): a `Retry-After` or the backoff after a failed flush.
    public var retryAt: Int64?
    public var lastError: String?
    public var lastSuccessAt: Int64?
}

extension Spool {
    static func registerDeliveryMigration(_ migrator: inout DatabaseMigrator) {
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
    }

    /// The endpoint's state; a new endpoint starts before the oldest record.
    public func state(of endpoint: String) throws -> EndpointState {
        try read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM endpoints WHERE name = ?", arguments: [endpoint]) else {
                return EndpointState()
            }
            return EndpointState(deliveredThrough: row["deliveredThrough"], sent: row["sent"], retryAt: row["retryAt"],
                                 lastError: row["lastError"], lastSuccessAt: row["lastSuccessAt"])
        }
    }

    /// The `seq` of the newest record, 0 when the spool is empty: a flush delivers up to it, so
    /// records spooled while it runs wait for the next one and a busy track cannot keep it going.
    public func lastSeq() throws -> Int64 {
        try read { try Int64.fetchOne($0, sql: "SELECT MAX(seq) FROM records") ?? 0 }
    }

    /// Up to `limit` records after `seq` and up to `horizon`, in order.
    public func records(after seq: Int64, through horizon: Int64 = .max, limit: Int) throws -> [PendingRecord] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT seq, id, body FROM records WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                             arguments: [seq, horizon, limit]).map { PendingRecord(seq: $0["seq"], id: $0["id"], body: $0["body"]) }
        }
    }

    /// How many records up to `horizon` wait for an endpoint.
    public func pendingCount(for endpoint: String, through horizon: Int64 = .max) throws -> Int {
        let through = try state(of: endpoint).deliveredThrough
        return try read {
            try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM records WHERE seq > ? AND seq <= ?", arguments: [through, horizon]) ?? 0
        }
    }

    /// Dead letters of an endpoint: records it refused, kept with the status and reason.
    public func deadLetters(for endpoint: String) throws -> [(id: String, status: Int?, reason: String)] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT id, status, reason FROM deadLetters WHERE endpoint = ? ORDER BY seq",
                             arguments: [endpoint]).map { ($0["id"], $0["status"], $0["reason"]) }
        }
    }

    /// Records that the endpoint has everything through `seq`: `delivered` of them were accepted,
    /// `deadLetters` refused. Then deletes what every endpoint in `allEndpoints` has.
    public func markDelivered(endpoint: String, through seq: Int64, delivered: Int,
                              deadLetters: [(record: PendingRecord, status: Int?, reason: String)],
                              now: Int64, allEndpoints: [String]) throws {
        try write { db in
            try db.execute(sql: """
                INSERT INTO endpoints (name, deliveredThrough, sent, lastSuccessAt) VALUES (?, ?, ?, ?)
                ON CONFLICT(name) DO UPDATE SET deliveredThrough = MAX(deliveredThrough, excluded.deliveredThrough),
                    sent = sent + excluded.sent, lastSuccessAt = excluded.lastSuccessAt, retryAt = NULL, lastError = NULL
                """, arguments: [endpoint, seq, delivered, now])
            for letter in deadLetters {
                try db.execute(sql: """
                    INSERT OR REPLACE INTO deadLetters (endpoint, seq, id, body, status, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [endpoint, letter.record.seq, letter.record.id, letter.record.body, letter.status,
                                     letter.reason, now])
            }
            try Spool.deleteDelivered(db, allEndpoints: allEndpoints)
        }
    }

    /// Records a failed attempt: the error to report and when to try again.
    public func markFailed(endpoint: String, error: String, retryAt: Int64?) throws {
        try write { db in
            try db.execute(sql: """
                INSERT INTO endpoints (name, retryAt, lastError) VALUES (?, ?, ?)
                ON CONFLICT(name) DO UPDATE SET retryAt = excluded.retryAt, lastError = excluded.lastError
                """, arguments: [endpoint, retryAt, error])
        }
    }

    /// Deletes the records every endpoint has delivered or dead-lettered.
    private static func deleteDelivered(_ db: Database, allEndpoints: [String]) throws {
        guard !allEndpoints.isEmpty else { return }
        var lowest = Int64.max
        for name in allEndpoints {
            let through = try Int64.fetchOne(db, sql: "SELECT deliveredThrough FROM endpoints WHERE name = ?",
                                             arguments: [name]) ?? 0
            lowest = min(lowest, through)
        }
        try db.execute(sql: "DELETE FROM records WHERE seq <= ?", arguments: [lowest])
    }
}
