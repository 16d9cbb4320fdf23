import Foundation
import GRDB
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import NIOSSL
import Synchronization

/// The street and house number at a point, as the HTTP geocoder tells them; both `nil` where
/// it knows none (at sea, in a field).
package struct StreetAddress: Sendable, Equatable, Codable {
    package var street: String?
    package var streetNumber: String?

    package init(street: String? = nil, streetNumber: String? = nil) {
        self.street = street
        self.streetNumber = streetNumber
    }
}

/// The optional HTTP reverse geocoder (config `geocoder.url`): Nominatim's
/// `/reverse?format=jsonv2`, for the street and house number the gazetteer does not have.
///
/// Like the geocoders of mobile operating systems it is throttled, to one request per
/// `geocoder.minInterval` (60 s) across every geolocate process, and its answers are kept on
/// disk by cell of 0.0001° (about 11 m), so a device that stays put never asks twice. A lookup
/// that is neither cached nor allowed by the throttle fails, and the record carries errorCode 1053.
package struct StreetGeocoder: Sendable {
    /// The base URL to which `/reverse` is appended.
    package var baseURL: String
    package var minIntervalMilliseconds: Int64
    package var timeoutMilliseconds: Int64
    /// `geocoder.caFile`: the CAs (PEM) an `https://` service's certificate is checked
    /// against; `nil` for the system's.
    package var caFile: String?
    package var cache: GeocoderCache
    package var transport: HTTPTransport
    /// Wall-clock time for the throttle and the cache, also on a replay: they are about the
    /// service's load, not the log's time.
    package var clock: WallClock

    package init(baseURL: String, minIntervalMilliseconds: Int64 = ConfigKey.geocoderMinInterval.builtInValue,
                 timeoutMilliseconds: Int64 = ConfigKey.geocoderTimeout.builtInValue, caFile: String? = nil, cache: GeocoderCache,
                 transport: HTTPTransport, clock: WallClock) {
        self.baseURL = baseURL
        self.minIntervalMilliseconds = minIntervalMilliseconds
        self.timeoutMilliseconds = timeoutMilliseconds
        self.caFile = caFile
        self.cache = cache
        self.transport = transport
        self.clock = clock
    }

    /// The geocoder of `settings` (`geocoder.*`), with its cache in `stateDirectory`; `nil`
    /// when `geocoder.url` is not set.
    package init?(settings: Settings, stateDirectory: String, clock: WallClock, elapsed: MonotonicClock) {
        guard let url = settings[ConfigKey.geocoderURL] else { return nil }
        self.init(baseURL: url, minIntervalMilliseconds: settings[ConfigKey.geocoderMinInterval],
                  timeoutMilliseconds: settings[ConfigKey.geocoderTimeout],
                  caFile: settings[ConfigKey.geocoderCAFile].map(settings.resolvedPath),
                  cache: GeocoderCache(stateDirectory: stateDirectory),
                  transport: AsyncHTTPTransport(clock: clock, elapsed: elapsed), clock: clock)
    }

    /// The HTTPS client configuration of `geocoder.caFile`; `nil` for the system's CAs.
    /// - Throws: `GeolocateError.missingSetting` (78): a caFile for a plain `http://` URL, or
    ///   one that cannot be read or holds no PEM certificate.
    package func tlsConfiguration() throws -> TLSConfiguration? {
        guard let caFile else { return nil }
        guard baseURL.lowercased().hasPrefix("https://") else {
            throw GeolocateError.missingSetting("geocoder.caFile needs an https:// geocoder.url")
        }
        return try TLSFiles(caFile: caFile).clientConfiguration(keys: "geocoder")
    }

    /// The street address at a point: from the cache, else from one request if the throttle allows.
    /// - Throws: `GeocodingError` when it cannot be had, also when the cache (which carries
    ///   the throttle) cannot be written: without it no request is made.
    package func street(latitude: Double, longitude: Double) async throws(GeocodingError) -> StreetAddress {
        let cell = GeocoderCache.cell(latitude: latitude, longitude: longitude)
        let now = clock.nowMilliseconds
        let cached: StreetAddress?
        do {
            cached = try cache.answerOrClaim(cell, now: now, minIntervalMilliseconds: minIntervalMilliseconds)
        } catch let error as GeocodingError {
            throw error
        } catch {
            throw GeocodingError.cacheNotWritable(ErrorText.plain(error))
        }
        if let cached { return cached }
        guard let url = StreetGeocoder.reverseURL(base: baseURL, latitude: latitude, longitude: longitude) else {
            throw GeocodingError.serviceFailed("\(ConfigStore.redactedURL(baseURL)) is not a URL that can be used")
        }
        let tls: TLSConfiguration?
        do { tls = try tlsConfiguration() } catch { throw GeocodingError.serviceFailed(ErrorText.plain(error)) }
        let response = await transport.get(url, headers: [("Accept", "application/json"), ("User-Agent", "geolocate/\(Defaults.version)")],
                                           timeoutMilliseconds: timeoutMilliseconds, tls: tls)
        let address: StreetAddress
        switch response {
        case .failed(let reason):
            throw GeocodingError.serviceFailed("\(ConfigStore.redactedURL(baseURL)): \(reason)")
        case .tlsFailed(let failure):
            let host = URLComponents(string: baseURL)?.host ?? ConfigStore.redactedURL(baseURL)
            throw GeocodingError.serviceFailed("\(ConfigStore.redactedURL(baseURL)): \(failure.text(host: host, for: .geocoder(caFile: caFile)))")
        case .status(let status, _) where status != 200:
            throw GeocodingError.serviceFailed("\(ConfigStore.redactedURL(baseURL)) answered HTTP \(status)")
        case .status(_, let body):
            address = try StreetGeocoder.parse(body)
        }
        // An answer that cannot be kept is still an answer.
        try? cache.store(address, for: cell, now: clock.nowMilliseconds)
        return address
    }

    /// The `/reverse` request for a point: `/reverse` is appended to the base URL's path, and
    /// the base URL's own query (an API key, say) is kept beside the request's parameters.
    static func reverseURL(base: String, latitude: Double, longitude: Double) -> String? {
        guard var components = URLComponents(string: base), components.scheme != nil, components.host != nil else { return nil }
        var path = components.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        components.percentEncodedPath = path + "/reverse"
        components.queryItems = (components.queryItems ?? []) + [
            URLQueryItem(name: "format", value: "jsonv2"),
            URLQueryItem(name: "lat", value: JSONWriter.decimal(latitude, digits: 7)),
            URLQueryItem(name: "lon", value: JSONWriter.decimal(longitude, digits: 7)),
            URLQueryItem(name: "zoom", value: "18"),
            URLQueryItem(name: "addressdetails", value: "1"),
        ]
        return components.string
    }

    /// Reads a Nominatim `jsonv2` answer: `address.road` (or the footway, pedestrian street…
    /// Nominatim names instead) and `address.house_number`; `{"error": …}` means no address here.
    package static func parse(_ body: [UInt8]) throws(GeocodingError) -> StreetAddress {
        guard let document = try? JSONScanner.parse(body), case .object = document else {
            throw GeocodingError.serviceFailed("the answer is not a JSON object")
        }
        if document.member("error") != nil { return StreetAddress() }
        guard let address = document.member("address"), case .object = address else {
            throw GeocodingError.serviceFailed("the answer has no address (is geocoder.url a Nominatim server?)")
        }
        let street = ["road", "pedestrian", "footway", "cycleway", "path", "square"].lazy.compactMap { address.member($0)?.string }.first
        return StreetAddress(street: street, streetNumber: address.member("house_number")?.string)
    }
}

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
    static let busyTimeout: TimeInterval = 2

    package init(stateDirectory: String) {
        path = StateFile.geocoderCache.path(in: stateDirectory)
        self.stateDirectory = stateDirectory
    }

    /// The cache key: the point rounded to 4 decimals (about 11 m).
    static func cell(latitude: Double, longitude: Double) -> String {
        JSONWriter.decimal(latitude, digits: 4) + "," + JSONWriter.decimal(longitude, digits: 4)
    }

    /// The cached answer for `cell` if it is recent enough; else takes the right to ask the
    /// service now, recording the request time, and returns `nil`.
    /// - Throws: `GeocodingError.throttled` when the last request is within the interval;
    ///   `GeolocateError.stateNotWritable` when the cache cannot be opened or written.
    func answerOrClaim(_ cell: String, now: Int64, minIntervalMilliseconds: Int64) throws -> StreetAddress? {
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
    func store(_ address: StreetAddress, for cell: String, now: Int64) throws {
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
            configuration.busyMode = .timeout(GeocoderCache.busyTimeout)
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
