import Foundation
import GRDB
import GeolocateModel
import Synchronization

/// The street geocoder's answers and throttle, in SQLite in the state directory
/// (`geocoder-cache.sqlite`), shared by every geolocate process through its transactions.
///
/// A lookup reads the cell and, when it must ask, claims the throttle in one IMMEDIATE
/// transaction, so two processes never both ask within `geocoder.minInterval`. The database is
/// opened, and its migrator run, on the first lookup only; the connection then serves every
/// later one of the command.
package final class GeocoderCache: Sendable {
    package let path: String
    private let stateDirectory: String
    /// The connection, once a lookup has opened it.
    private let database = Mutex<DatabaseQueue?>(nil)
    /// Answers older than this are asked again.
    static let maxAgeMilliseconds: Int64 = 30 * 86_400_000
    /// The cache keeps at most this many cells, dropping the oldest.
    static let maxCells = 10_000
    /// How long a lookup waits for another process's transaction: a record must not stall.
    static let busyTimeout: Duration = .seconds(2)

    package init(stateDirectory: String) {
        path = StateFile.geocoderCache.path(in: stateDirectory)
        self.stateDirectory = stateDirectory
    }

    /// The cache key: the point rounded to 4 decimals (about 11 m).
    package static func cell(latitude: Double, longitude: Double) -> String {
        JSONWriter.decimal(latitude, digits: 4) + "," + JSONWriter.decimal(longitude, digits: 4)
    }

    /// The cached answer for `cell` if it is recent enough; else takes the right to ask the
    /// service now, recording the request time, and returns `nil`.
    /// - Throws: `GeocodingError.throttled` when the last request is within the interval;
    ///   `GeolocateError.stateNotWritable` when the cache cannot be opened or written.
    package func answerOrClaim(_ cell: String, now: Int64, minIntervalMilliseconds: Int64) throws -> StreetAddress? {
        try write { db in
            if let row = try Row.fetchOne(db, sql: "SELECT street, streetNumber FROM cells WHERE cell = ? AND storedAt > ?",
                                          arguments: [cell, now - GeocoderCache.maxAgeMilliseconds]) {
                return StreetAddress(street: row.lenient("street"), streetNumber: row.lenient("streetNumber"))
            }
            let last = try Int64.fetchOne(db, sql: "SELECT lastRequestAt FROM throttle")
            if let last, now >= last, now - last < minIntervalMilliseconds {
                throw GeocodingError.throttled(retryInMilliseconds: minIntervalMilliseconds - (now - last))
            }
            try db.execute(sql: "INSERT OR REPLACE INTO throttle (id, lastRequestAt) VALUES (1, ?)", arguments: [now])
            return nil
        }
    }

    /// Keeps an answer, dropping expired cells and the oldest beyond `maxCells`.
    package func store(_ address: StreetAddress, for cell: String, now: Int64) throws {
        try write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO cells (cell, street, streetNumber, storedAt) VALUES (?, ?, ?, ?)",
                           arguments: [cell, address.street, address.streetNumber, now])
            try db.execute(sql: "DELETE FROM cells WHERE storedAt <= ?", arguments: [now - GeocoderCache.maxAgeMilliseconds])
            try db.execute(sql: """
                DELETE FROM cells WHERE cell IN (SELECT cell FROM cells ORDER BY storedAt DESC LIMIT -1 OFFSET ?)
                """, arguments: [GeocoderCache.maxCells])
        }
    }

    /// Runs `body` in an IMMEDIATE transaction on the cache (GRDB's `write` on a writable
    /// connection), made on first use.
    private func write<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try openedDatabase().write(body)
        } catch let error as GeocodingError {
            throw error
        } catch let error as GeolocateError {
            throw error
        } catch let error as DatabaseError {
            throw GeolocateError.stateNotWritable(path: path, reason: error.message ?? error.description)
        } catch {
            throw GeolocateError.stateNotWritable(path: path, reason: ErrorText.plain(error))
        }
    }

    /// The connection to the cache: opened, the file made and migrated, by the first call; a
    /// call after one that failed tries again.
    private func openedDatabase() throws -> DatabaseQueue {
        try database.withLock { database in
            if let database { return database }
            guard let directory = try OpenDirectory.open(stateDirectory, create: true) else { throw POSIXError(.ENOENT) }
            // Addresses are personal: the file is private, as the spool is; it and SQLite's
            // files beside it are judged as every state file is (SPEC §14).
            if let opened = try directory.openFile(StateFile.geocoderCache.rawValue, .readWrite, create: true) { close(opened.descriptor) }
            try directory.check(StateFile.geocoderCache.companionNames)
            var configuration = Configuration()
            configuration.busyMode = .timeout(GeocoderCache.busyTimeout.seconds)
            let opened = try DatabaseQueue(path: NoFollowDatabase.uri(StateFile.geocoderCache.rawValue, in: directory),
                                           configuration: configuration)
            try GeocoderCache.migrator.migrate(opened)
            database = opened
            return opened
        }
    }

    private static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("cache") { db in
            try db.execute(sql: """
                CREATE TABLE cells (cell TEXT PRIMARY KEY, street TEXT, streetNumber TEXT, storedAt INTEGER NOT NULL);
                CREATE INDEX cells_storedAt ON cells(storedAt);
                CREATE TABLE throttle (id INTEGER PRIMARY KEY CHECK (id = 1), lastRequestAt INTEGER NOT NULL);
                """)
        }
        return migrator
    }()
}

extension GeocoderCache {
    /// How many answers the cache holds; `nil` when there is no cache (or it cannot be read).
    /// Read only, creating nothing beside it (`ReadOnlyDatabase`).
    package func entryCount(elapsed: MonotonicClock) -> Int? {
        guard let database = try? ReadOnlyDatabase.open(path, elapsed: elapsed) else { return nil }
        return try? database.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM cells") }
    }
}
