/// The fields of a record's location object, as a set: what precision and
/// `privacy.locationAttributeFilter` let through.
package struct LocationAttributes: OptionSet, Sendable, Hashable {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    package static let latitude = LocationAttributes(rawValue: 1 << 0)
    package static let longitude = LocationAttributes(rawValue: 1 << 1)
    package static let accuracy = LocationAttributes(rawValue: 1 << 2)
    package static let altitude = LocationAttributes(rawValue: 1 << 3)
    package static let provider = LocationAttributes(rawValue: 1 << 4)
    package static let permissions = LocationAttributes(rawValue: 1 << 5)
    package static let recordTimestamp = LocationAttributes(rawValue: 1 << 6)
    package static let fixMode = LocationAttributes(rawValue: 1 << 7)
    package static let speed = LocationAttributes(rawValue: 1 << 8)
    package static let course = LocationAttributes(rawValue: 1 << 9)
    package static let verticalAccuracy = LocationAttributes(rawValue: 1 << 10)
    package static let countryCode = LocationAttributes(rawValue: 1 << 11)
    package static let district = LocationAttributes(rawValue: 1 << 12)
    package static let city = LocationAttributes(rawValue: 1 << 13)
    package static let street = LocationAttributes(rawValue: 1 << 14)
    package static let streetNumber = LocationAttributes(rawValue: 1 << 15)

    /// What the fix was and how good, but not where: kept at every precision.
    package static let metadata: LocationAttributes = [.accuracy, .provider, .permissions, .recordTimestamp, .fixMode]
    /// Where exactly: only at `GPS_LOCATION`.
    package static let position: LocationAttributes = [.latitude, .longitude, .altitude, .speed, .course, .verticalAccuracy]
    package static let address: LocationAttributes = [.countryCode, .district, .city, .street, .streetNumber]
    package static let all: LocationAttributes = metadata.union(position).union(address)

    /// Each field by its name in the location object; `coordinates` (Veridium's name) is both
    /// latitude and longitude.
    package static let names: [(name: String, attributes: LocationAttributes)] = [
        ("latitude", .latitude), ("longitude", .longitude), ("coordinates", [.latitude, .longitude]),
        ("accuracy", .accuracy), ("altitude", .altitude), ("provider", .provider), ("permissions", .permissions),
        ("recordTimestamp", .recordTimestamp), ("fixMode", .fixMode), ("speed", .speed), ("course", .course),
        ("verticalAccuracy", .verticalAccuracy), ("countryCode", .countryCode), ("district", .district),
        ("city", .city), ("street", .street), ("streetNumber", .streetNumber),
    ]

    /// Parses a list of field names, given as a comma list or a JSON array.
    /// - Throws: `GeolocateError.usage` naming the valid fields.
    package init(parsingNames names: [String]) throws {
        var attributes: LocationAttributes = []
        for name in names {
            guard let entry = LocationAttributes.names.first(where: { $0.name == name }) else {
                throw GeolocateError.usage("unknown location attribute '\(name)' (valid: \(LocationAttributes.names.map(\.name).joined(separator: ", ")))")
            }
            attributes.formUnion(entry.attributes)
        }
        self = attributes
    }
}
