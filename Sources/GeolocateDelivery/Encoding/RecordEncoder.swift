import GeolocateConfig
import GeolocateModel
import GeolocateSpool

/// Writes one record in one wire format.
///
/// An encoder is a pure function of the record: it writes what the record holds and its
/// `attributes` allow, and nothing else decides. Callers go through `RecordFormat` or
/// `EndpointFormat`, which first limit the record by the `OutputPolicy` in force.
package protocol RecordEncoder {
    /// Writes `record` as one JSON object.
    static func write(_ record: Record, to json: inout JSONWriter)
}

/// How `trigger` prints its record (`--format`).
package enum RecordFormat: String, Sendable, CaseIterable {
    /// The Mosaic-style record of SPEC §3.1, as track prints and spools it.
    case mosaic
    /// The Veridium `location` object of SPEC §6.
    case veridium
    /// One OpenLocate location, as an `openlocate` endpoint receives it in `locations`.
    case openlocate
    /// The OwnTracks location message.
    case owntracks
    /// Traccar's OsmAnd query (`id=…&lat=…`), as an `osmand` endpoint receives it.
    case osmand

    /// `record` under `policy` as one line, without the newline: JSON, or the OsmAnd query.
    package func line(_ record: Record, policy: OutputPolicy, sender: Sender = Sender()) -> String {
        var line = lineBytes(record, policy: policy, sender: sender)
        line.removeLast()
        return String(decoding: line, as: UTF8.self)
    }

    /// `line(_:policy:sender:)` as UTF-8 with its newline: what `track --stdout` writes, made
    /// in one buffer and never copied into a string (a line with signals is a kilobyte).
    package func lineBytes(_ record: Record, policy: OutputPolicy, sender: Sender = Sender()) -> [UInt8] {
        // An unrestricted policy takes nothing away: the record is written as it is, uncopied.
        policy == .unrestricted ? lineBytes(record, sender: sender) : lineBytes(policy.applied(to: record), sender: sender)
    }

    private func lineBytes(_ record: Record, sender: Sender) -> [UInt8] {
        var json = JSONWriter(capacity: 1536)
        switch self {
        case .mosaic: MosaicEncoder.write(record, to: &json)
        case .veridium: VeridiumEncoder.write(record, to: &json)
        case .openlocate: OpenLocateEncoder.write(record, to: &json)
        case .owntracks: OwnTracksEncoder.write(record, sender: sender, to: &json)
        case .osmand: return Array((OsmAndEncoder.query(record, sender: sender) + "\n").utf8)
        }
        json.endLine()
        return json.bytes
    }

    /// Whether the format names the device, which `Sender` then has to.
    package var namesTheDevice: Bool { self == .osmand || self == .owntracks }
}

extension EndpointFormat {
    /// Whether `record`, under `policy`, can be written in this format: OwnTracks and OsmAnd
    /// have no message for a record without coordinates (a timeout, or privacy withholding
    /// them), which is then skipped, not sent.
    package func carries(_ record: Record, under policy: OutputPolicy = .unrestricted) -> Bool {
        switch self {
        case .openlocate, .mosaicNDJSON, .mosaic, .jwt:
            return true
        case .owntracks, .osmand:
            let record = policy.applied(to: record)
            return record.fix != nil && record.attributes.isSuperset(of: [.latitude, .longitude])
        }
    }

    /// The HTTP request body for `records` under `policy`, written into one buffer (the
    /// one-record formats take the first record only; OsmAnd's is empty: its query says all).
    /// - Throws: `GeolocateError.missingSetting` (78) for `jwt` when the sender has no device
    ///   key, or the key cannot sign.
    package func body(for records: [Record], policy: OutputPolicy, sender: Sender = Sender()) throws -> [UInt8] {
        if self == .jwt {
            guard let signer = sender.signer else { throw GeolocateError.missingSetting("the jwt format needs the device key: geolocate key init") }
            return try signer.lines(for: records, policy: policy)
        }
        // Room for a record with signals (about 1,100 bytes) at once: growing the buffer copies it.
        var json = JSONWriter(capacity: 1_536 * max(records.count, 1))
        switch self {
        case .mosaic:
            if let record = records.first { MosaicEncoder.write(policy.applied(to: record), to: &json) }
        case .owntracks:
            if let record = records.first { OwnTracksEncoder.write(policy.applied(to: record), sender: sender, to: &json) }
        case .osmand, .jwt:
            break
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

    /// One MQTT message for `record`: the HTTP body of a batch of one, so a subscriber parses
    /// what an HTTP receiver does (a §3.1 record for both Mosaic formats; one token, without
    /// its newline, for `jwt`).
    package func message(for record: Record, policy: OutputPolicy, sender: Sender) throws -> [UInt8] {
        let body = try (self == .mosaicNDJSON ? EndpointFormat.mosaic : self).body(for: [record], policy: policy, sender: sender)
        return self == .jwt ? Array(body.dropLast()) : body
    }
}
