import Foundation

/// How an endpoint wants its records.
public enum EndpointFormat: String, Sendable, CaseIterable {
    /// `{"locations":[...]}` with OpenLocate's snake_case fields.
    case openlocate
    /// The §3.1 records, one JSON object per line.
    case mosaicNDJSON = "mosaic-ndjson"
    /// One §3.1 record per request, a JSON object, as `trigger --post` sends it.
    case mosaic

    /// The formats, for messages: "openlocate, mosaic-ndjson or mosaic".
    public static var validValues: String {
        let names = allCases.map(\.rawValue)
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    var contentType: String {
        switch self {
        case .openlocate, .mosaic: return "application/json"
        case .mosaicNDJSON: return "application/x-ndjson"
        }
    }

    /// The request body for records given as their Mosaic JSON lines (one for `mosaic`).
    public func body(for lines: [String]) -> String {
        switch self {
        case .mosaic:
            return lines.first ?? ""
        case .mosaicNDJSON:
            return lines.map { $0 + "\n" }.joined()
        case .openlocate:
            return "{\"locations\":[" + lines.map { OpenLocateRecord.json(fromMosaicLine: $0) }.joined(separator: ",") + "]}"
        }
    }
}

/// A configured destination (`endpoints.NAME.*`).
public struct Endpoint: Sendable, Equatable {
    public var name: String
    public var url: String
    public var headers: [String: String]
    public var format: EndpointFormat
    public var batchSize: Int
    public var timeoutMilliseconds: Int64

    public static let defaultBatchSize = 500
    public static let defaultTimeoutMilliseconds: Int64 = 10_000

    public init(name: String, url: String, headers: [String: String] = [:], format: EndpointFormat = .openlocate,
                batchSize: Int = Endpoint.defaultBatchSize, timeoutMilliseconds: Int64 = Endpoint.defaultTimeoutMilliseconds) {
        self.name = name
        self.url = url
        self.headers = headers
        self.format = format
        self.batchSize = batchSize
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// The URL without credentials, for messages and `--json`.
    public var redactedURL: String { ConfigStore.redactedURL(url) }

    /// The destination of records `trigger --post URL` could not deliver: named by its URL
    /// (no configured name contains "://"), one record per request, as `--post` sends it.
    static func post(to url: String) -> Endpoint {
        Endpoint(name: url, url: url, format: .mosaic, batchSize: 1)
    }

    /// Whether this is a `trigger --post` URL rather than a configured endpoint.
    var isPostDestination: Bool { name.contains("://") }

    /// The name for messages and reports: a `--post` URL without its secrets.
    package var displayName: String { isPostDestination ? redactedURL : name }

    /// The POST of records, given as their Mosaic JSON lines, in this endpoint's format.
    func request(for lines: [String], idempotencyKey: String) -> DeliveryRequest {
        DeliveryRequest(url: url, headers: headers, contentType: format.contentType, idempotencyKey: idempotencyKey,
                        body: format.body(for: lines), timeoutMilliseconds: timeoutMilliseconds)
    }
}

/// The OpenLocate rendering of a record: numbers where Mosaic has decimal strings, snake_case
/// names, seconds for timestamps, `device_id` instead of advertising ids, and the address
/// parts geolocate adds (`country_code`, `district`, `city`, `street`, `street_number`).
///
/// It reads the spooled Mosaic line directly: in geolocate's own output the text `"key":` can
/// only be that key (a quote inside a string value is always escaped), so each field is found
/// by a byte search, several times faster than a JSON parse.
enum OpenLocateRecord {
    static func json(fromMosaicLine line: String) -> String {
        let bytes = Array(line.utf8)
        var json = JSONObjectWriter()
        func raw(_ key: String) -> ArraySlice<UInt8>? { value(of: key, in: bytes) }
        func text(_ slice: ArraySlice<UInt8>) -> String { String(decoding: slice, as: UTF8.self) }
        func string(_ key: String, _ name: String) {
            if let value = raw(key), value.first == UInt8(ascii: "\"") { json.addRaw(name, text(value)) }
        }
        func number(_ key: String, _ name: String) {
            // A decimal string in Mosaic: its digits are the JSON number.
            if let value = raw(key), value.count > 2, value.first == UInt8(ascii: "\"") {
                json.addRaw(name, text(value.dropFirst().dropLast()))
            }
        }
        func seconds(_ key: String, _ name: String) {
            if let value = raw(key), let milliseconds = Int64(text(value)) { json.add(name, milliseconds / 1000) }
        }
        string("id", "id")
        number("latitude", "latitude")
        number("longitude", "longitude")
        seconds("recordTimestamp", "utc_timestamp")
        seconds("triggeredAt", "utc_timestamp_received")
        number("accuracy", "horizontal_accuracy")
        number("verticalAccuracy", "vertical_accuracy")
        number("altitude", "altitude")
        number("course", "course")
        number("speed", "speed")
        string("context", "location_context")
        string("provider", "location_provider")
        string("action", "action")
        string("deviceId", "device_id")
        string("deviceModel", "device_model")
        string("osVersion", "os_version")
        string("countryCode", "country_code")
        string("district", "district")
        string("city", "city")
        string("street", "street")
        string("streetNumber", "street_number")
        return json.finished()
    }

    /// The raw JSON text of `key`'s value: a quoted string with its quotes, or a bare token.
    static func value(of key: String, in bytes: [UInt8]) -> ArraySlice<UInt8>? {
        MosaicLine.field(key, in: bytes).map { bytes[$0.value] }
    }
}
