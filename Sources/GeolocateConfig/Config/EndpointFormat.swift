/// How an endpoint wants its records.
package enum EndpointFormat: String, Sendable, CaseIterable {
    /// `{"locations":[...]}` with OpenLocate's snake_case fields.
    case openlocate
    /// The §3.1 records, one JSON object per line.
    case mosaicNDJSON = "mosaic-ndjson"
    /// One §3.1 record per request, a JSON object, as `trigger --post` sends it.
    case mosaic
    /// One OwnTracks location message per request or MQTT message.
    case owntracks
    /// Traccar's OsmAnd protocol: one request per record, its fields in the query (HTTP only).
    case osmand
    /// Location tokens (SPEC §15), one per line, signed when sent: the records' JWTs.
    case jwt

    /// The formats, for messages: "openlocate, mosaic-ndjson, mosaic, owntracks, osmand or jwt".
    package static var validValues: String {
        let names = allCases.map(\.rawValue)
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    /// Whether an HTTP request carries one record: then `batchSize` is 1 whatever is set.
    package var sendsOneRecordPerRequest: Bool { self == .mosaic || self == .owntracks || self == .osmand }

    package var contentType: String {
        switch self {
        case .openlocate, .mosaic, .owntracks: return "application/json"
        case .mosaicNDJSON: return "application/x-ndjson"
        case .osmand: return "application/x-www-form-urlencoded"
        case .jwt: return "application/jwt"
        }
    }
}
