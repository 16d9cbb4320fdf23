import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import NIOSSL

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
