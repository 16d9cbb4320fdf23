import GeolocateModel

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
