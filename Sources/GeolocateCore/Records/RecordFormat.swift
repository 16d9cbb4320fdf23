/// How `trigger` prints its record (`--format`).
public enum RecordFormat: String, Sendable, CaseIterable {
    /// The Mosaic-style record of SPEC §3.1, which is also what is spooled.
    case mosaic
    /// The Veridium `location` object of SPEC §6.
    case veridium
    /// One OpenLocate location, as an `openlocate` endpoint receives it in `locations`.
    case openlocate

    /// The record as one line of JSON, without the newline.
    public func render(_ record: Record) -> String {
        switch self {
        case .mosaic: return MosaicRecord(record).jsonLine()
        case .veridium: return VeridiumLocation.json(record)
        case .openlocate: return OpenLocateRecord.json(fromMosaicLine: MosaicRecord(record).jsonLine())
        }
    }
}

/// The Veridium `location` object (SPEC §6): `coordinates` and `accuracy` as numbers, the
/// address parts, and `errorCode`.
///
/// A field the privacy settings withhold is left out; one that is allowed but unknown (no
/// fix, no street geocoder) is `null`, so a reader always finds the allowed keys.
public enum VeridiumLocation {
    public static func json(_ record: Record) -> String {
        let allowed = record.attributes
        let fix = record.fix
        let address = record.address
        var json = JSONObjectWriter()
        if allowed.isSuperset(of: [.latitude, .longitude]) {
            if let fix {
                var coordinates = JSONObjectWriter()
                coordinates.addNumber("latitude", fix.latitude, digits: 7)
                coordinates.addNumber("longitude", fix.longitude, digits: 7)
                json.addRaw("coordinates", coordinates.finished())
            } else {
                json.addRaw("coordinates", "null")
            }
        }
        if allowed.contains(.accuracy) { json.addNumber("accuracy", fix?.horizontalAccuracy, digits: 1) }
        if allowed.contains(.countryCode) { json.add("countryCode", address?.countryCode) }
        if allowed.contains(.district) { json.add("district", address?.district) }
        if allowed.contains(.city) { json.add("city", address?.city) }
        if allowed.contains(.street) { json.add("street", address?.street) }
        if allowed.contains(.streetNumber) { json.add("streetNumber", address?.streetNumber) }
        json.add("errorCode", Int64(record.errorCode.rawValue))
        return json.finished()
    }
}
