/// Writes one record in one wire format.
///
/// An encoder is a pure function of the record: it writes what the record holds and its
/// `attributes` allow, and nothing else decides. Callers go through `RecordFormat` or
/// `EndpointFormat`, which first limit the record by the `OutputPolicy` in force.
protocol RecordEncoder {
    /// Writes `record` as one JSON object.
    static func write(_ record: Record, to json: inout JSONWriter)
}

/// How `trigger` prints its record (`--format`).
public enum RecordFormat: String, Sendable, CaseIterable {
    /// The Mosaic-style record of SPEC §3.1, as track prints and spools it.
    case mosaic
    /// The Veridium `location` object of SPEC §6.
    case veridium
    /// One OpenLocate location, as an `openlocate` endpoint receives it in `locations`.
    case openlocate

    var encoder: RecordEncoder.Type {
        switch self {
        case .mosaic: return MosaicEncoder.self
        case .veridium: return VeridiumEncoder.self
        case .openlocate: return OpenLocateEncoder.self
        }
    }

    /// `record` under `policy` as one line of JSON, without the newline.
    public func line(_ record: Record, policy: OutputPolicy) -> String {
        var json = JSONWriter()
        encoder.write(policy.applied(to: record), to: &json)
        return json.text
    }
}

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

    /// The request body for `records` under `policy`, written into one buffer (`mosaic`
    /// takes the first record only: it sends one per request).
    public func body(for records: [Record], policy: OutputPolicy) -> [UInt8] {
        var json = JSONWriter(capacity: 512 * max(records.count, 1))
        switch self {
        case .mosaic:
            if let record = records.first { MosaicEncoder.write(policy.applied(to: record), to: &json) }
        case .mosaicNDJSON:
            for record in records {
                MosaicEncoder.write(policy.applied(to: record), to: &json)
                json.newline()
            }
        case .openlocate:
            json.beginObject()
            json.beginArray("locations")
            for record in records { OpenLocateEncoder.write(policy.applied(to: record), to: &json) }
            json.endArray()
            json.endObject()
        }
        return json.bytes
    }
}
