import Foundation

/// The street and house number at a point, as the HTTP geocoder tells them; both `nil` where
/// it knows none (at sea, in a field).
public struct StreetAddress: Sendable, Equatable, Codable {
    public var street: String?
    public var streetNumber: String?

    public init(street: String? = nil, streetNumber: String? = nil) {
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
public struct StreetGeocoder: Sendable {
    /// The base URL to which `/reverse` is appended.
    public var baseURL: String
    public var minIntervalMilliseconds: Int64
    public var timeoutMilliseconds: Int64
    public var cache: GeocoderCache
    public var transport: HTTPTransport
    /// Wall-clock time for the throttle and the cache, also on a replay: they are about the
    /// service's load, not the log's time.
    public var clock: WallClock

    public static let defaultMinIntervalMilliseconds: Int64 = 60_000
    public static let defaultTimeoutMilliseconds: Int64 = 2_000

    public init(baseURL: String, minIntervalMilliseconds: Int64 = StreetGeocoder.defaultMinIntervalMilliseconds,
                timeoutMilliseconds: Int64 = StreetGeocoder.defaultTimeoutMilliseconds, cache: GeocoderCache,
                transport: HTTPTransport = AsyncHTTPTransport(), clock: WallClock = SystemClock()) {
        self.baseURL = baseURL
        self.minIntervalMilliseconds = minIntervalMilliseconds
        self.timeoutMilliseconds = timeoutMilliseconds
        self.cache = cache
        self.transport = transport
        self.clock = clock
    }

    /// The street address at a point: from the cache, else from one request if the throttle allows.
    /// - Throws: `GeocodingError` when it cannot be had, also when the cache (which carries
    ///   the throttle) cannot be written: without it no request is made.
    public func street(latitude: Double, longitude: Double) async throws(GeocodingError) -> StreetAddress {
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
        let response = await transport.get(url, headers: [("Accept", "application/json"), ("User-Agent", "geolocate/\(Defaults.version)")],
                                           timeoutMilliseconds: timeoutMilliseconds)
        let address: StreetAddress
        switch response {
        case .failed(let reason):
            throw GeocodingError.serviceFailed("\(ConfigStore.redactedURL(baseURL)): \(reason)")
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
        guard let document = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw GeocodingError.serviceFailed("the answer is not a JSON object")
        }
        if document["error"] != nil { return StreetAddress() }
        guard let address = document["address"] as? [String: Any] else {
            throw GeocodingError.serviceFailed("the answer has no address (is geocoder.url a Nominatim server?)")
        }
        let street = ["road", "pedestrian", "footway", "cycleway", "path", "square"].lazy.compactMap { address[$0] as? String }.first
        return StreetAddress(street: street, streetNumber: address["house_number"] as? String)
    }
}

/// The street geocoder's answers and throttle, in the state directory (`geocoder-cache.json`),
/// shared by every geolocate process under `geocoder.lock`.
public struct GeocoderCache: Sendable {
    public let path: String
    private let lockPath: String
    /// Answers older than this are asked again.
    static let maxAgeMilliseconds: Int64 = 30 * 86_400_000
    /// The file keeps at most this many cells, dropping the oldest.
    static let maxCells = 10_000

    public init(stateDirectory: String) {
        path = stateDirectory + "/geocoder-cache.json"
        lockPath = stateDirectory + "/geocoder.lock"
    }

    struct Document: Codable {
        var lastRequestAt: Int64?
        var cells: [String: Entry] = [:]
    }

    struct Entry: Codable {
        var address: StreetAddress
        var storedAt: Int64
    }

    /// The cache key: the point rounded to 4 decimals (about 11 m).
    static func cell(latitude: Double, longitude: Double) -> String {
        JSONWriter.decimal(latitude, digits: 4) + "," + JSONWriter.decimal(longitude, digits: 4)
    }

    /// The cached answer for `cell` if it is recent enough; else takes the right to ask the
    /// service now, recording the request time, and returns `nil`.
    /// - Throws: `GeocodingError.throttled` when the last request is within the interval.
    func answerOrClaim(_ cell: String, now: Int64, minIntervalMilliseconds: Int64) throws -> StreetAddress? {
        let lock = try FileLock(path: lockPath)
        defer { withExtendedLifetime(lock) {} }
        var document = load()
        if let cached = fresh(document.cells[cell], now: now) { return cached }
        if let last = document.lastRequestAt, now >= last, now - last < minIntervalMilliseconds {
            throw GeocodingError.throttled(retryInMilliseconds: minIntervalMilliseconds - (now - last))
        }
        document.lastRequestAt = now
        try save(document)
        return nil
    }

    /// Keeps an answer, dropping expired cells and the oldest beyond `maxCells`.
    func store(_ address: StreetAddress, for cell: String, now: Int64) throws {
        let lock = try FileLock(path: lockPath)
        defer { withExtendedLifetime(lock) {} }
        var document = load()
        document.cells[cell] = Entry(address: address, storedAt: now)
        document.cells = document.cells.filter { fresh($0.value, now: now) != nil }
        if document.cells.count > GeocoderCache.maxCells {
            let kept = document.cells.sorted { $0.value.storedAt > $1.value.storedAt }.prefix(GeocoderCache.maxCells)
            document.cells = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
        }
        try save(document)
    }

    private func fresh(_ entry: Entry?, now: Int64) -> StreetAddress? {
        guard let entry, now - entry.storedAt < GeocoderCache.maxAgeMilliseconds else { return nil }
        return entry.address
    }

    /// The document; an unreadable file is treated as empty, since it is only a cache.
    private func load() -> Document {
        guard let data = FileManager.default.contents(atPath: path),
              let document = try? JSONDecoder().decode(Document.self, from: data) else { return Document() }
        return document
    }

    private func save(_ document: Document) throws {
        do {
            try AtomicFile.write(try JSONEncoder().encode(document), to: path, permissions: 0o600)
        } catch {
            throw GeolocateError.stateNotWritable(path: path, reason: ErrorText.plain(error))
        }
    }
}
