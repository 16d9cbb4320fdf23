import GeolocateModel

/// The Veridium `location` object (SPEC §6): `coordinates` and `accuracy` as numbers, the
/// address parts, and `errorCode`.
///
/// A field the privacy settings withhold is left out; one that is allowed but unknown (no
/// fix, no street geocoder) is `null`, so a reader always finds the allowed keys.
package enum VeridiumEncoder: RecordEncoder {
    package static func write(_ record: Record, to json: inout JSONWriter) {
        let allowed = record.attributes
        let fix = record.fix
        let address = record.address
        json.beginObject()
        if allowed.isSuperset(of: [.latitude, .longitude]) {
            if let fix {
                json.beginObject("coordinates")
                json.number("latitude", fix.latitude, digits: 7)
                json.number("longitude", fix.longitude, digits: 7)
                json.endObject()
            } else {
                json.null("coordinates")
            }
        }
        if allowed.contains(.accuracy) { json.number("accuracy", fix?.horizontalAccuracy, digits: 1) }
        for part in Address.parts where allowed.contains(part.attribute) {
            json.string(part.name, address?[keyPath: part.value])
        }
        json.integer("errorCode", Int64(record.errorCode.rawValue))
        json.endObject()
    }
}
