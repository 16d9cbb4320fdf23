import GeolocateConfig
import GeolocateModel

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
