/// How much of a location records may tell (config `privacy.precision`, SPEC §6), from
/// nothing to the coordinates.
///
/// Each level reports the address parts at or above it; only `gpsLocation` reports
/// coordinates (and altitude, speed, course and vertical accuracy, which are as precise).
package enum LocationPrecision: String, Sendable, CaseIterable, Comparable {
    case none = "NONE"
    case country = "COUNTRY"
    case district = "DISTRICT"
    case city = "CITY"
    case street = "STREET"
    case streetNumber = "STREET_NUMBER"
    case gpsLocation = "GPS_LOCATION"

    package static func < (lhs: LocationPrecision, rhs: LocationPrecision) -> Bool { lhs.rank < rhs.rank }

    private var rank: Int { LocationPrecision.allCases.firstIndex(of: self) ?? 0 }

    package static var validValues: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// The fields of the location object this level lets through.
    package var attributes: LocationAttributes {
        var allowed: LocationAttributes = .metadata
        if self >= .country { allowed.insert(.countryCode) }
        if self >= .district { allowed.insert(.district) }
        if self >= .city { allowed.insert(.city) }
        if self >= .street { allowed.insert(.street) }
        if self >= .streetNumber { allowed.insert(.streetNumber) }
        if self >= .gpsLocation { allowed.formUnion(.position) }
        return allowed
    }
}
