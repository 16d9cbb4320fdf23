import Foundation

/// How an endpoint wants its records.
public enum EndpointFormat: String, Sendable, CaseIterable {
    /// `{"locations":[...]}` with OpenLocate's snake_case fields.
    case openlocate
    /// The §3.1 records, one JSON object per line.
    case mosaicNDJSON = "mosaic-ndjson"

    var contentType: String {
        switch self {
        case .openlocate: return "application/json"
        case .mosaicNDJSON: return "application/x-ndjson"
        }
    }

    /// The request body for records given as their Mosaic JSON lines.
    public func body(for lines: [String]) -> String {
        switch self {
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
}

/// The OpenLocate rendering of a record: numbers where Mosaic has decimal strings, snake_case
/// names, seconds for timestamps, and `device_id` instead of advertising ids.
enum OpenLocateRecord {
    static func json(fromMosaicLine line: String) -> String {
        guard let record = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else { return "{}" }
        let location = record["location"] as? [String: Any] ?? [:]
        var json = JSONObjectWriter()
        json.add("id", record["id"] as? String)
        func number(_ key: String, _ name: String) {
            if let text = location[key] as? String, Double(text) != nil { json.addRaw(name, text) }
        }
        number("latitude", "latitude")
        number("longitude", "longitude")
        if let time = location["recordTimestamp"] as? Int { json.add("utc_timestamp", Int64(time / 1000)) }
        if let time = record["triggeredAt"] as? Int { json.add("utc_timestamp_received", Int64(time / 1000)) }
        number("accuracy", "horizontal_accuracy")
        number("verticalAccuracy", "vertical_accuracy")
        number("altitude", "altitude")
        number("course", "course")
        number("speed", "speed")
        json.addIfPresent("location_context", record["context"] as? String)
        json.addIfPresent("location_provider", location["provider"] as? String)
        json.addIfPresent("action", record["action"] as? String)
        json.addIfPresent("device_id", record["deviceId"] as? String)
        json.addIfPresent("device_model", record["deviceModel"] as? String)
        json.addIfPresent("os_version", record["osVersion"] as? String)
        return json.finished()
    }
}
