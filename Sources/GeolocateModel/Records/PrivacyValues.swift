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

/// The address of a location, as far as the geocoders and the precision tell it.
package struct Address: Sendable, Equatable {
    /// ISO 3166-1 alpha-2, or `privacy.countryCodeReplacement` when the fix is too inaccurate.
    package var countryCode: String?
    /// The first-level administrative division.
    package var district: String?
    package var city: String?
    package var street: String?
    package var streetNumber: String?

    package init(countryCode: String? = nil, district: String? = nil, city: String? = nil,
                 street: String? = nil, streetNumber: String? = nil) {
        self.countryCode = countryCode
        self.district = district
        self.city = city
        self.street = street
        self.streetNumber = streetNumber
    }

    /// Each part with its attribute, its name in Mosaic and Veridium, and in OpenLocate, in
    /// the order records list them.
    package static let parts: [(attribute: LocationAttributes, value: KeyPath<Address, String?> & Sendable, name: String, snakeCaseName: String)] = [
        (.countryCode, \.countryCode, "countryCode", "country_code"), (.district, \.district, "district", "district"),
        (.city, \.city, "city", "city"), (.street, \.street, "street", "street"),
        (.streetNumber, \.streetNumber, "streetNumber", "street_number"),
    ]

    /// Only the parts in `attributes`; `nil` when none is left.
    package func limited(to attributes: LocationAttributes) -> Address? {
        var address = self
        if !attributes.contains(.countryCode) { address.countryCode = nil }
        if !attributes.contains(.district) { address.district = nil }
        if !attributes.contains(.city) { address.city = nil }
        if !attributes.contains(.street) { address.street = nil }
        if !attributes.contains(.streetNumber) { address.streetNumber = nil }
        return address == Address() ? nil : address
    }
}

/// Why an address could not be found; the record still goes out, with errorCode 1053.
package enum GeocodingError: Error, Equatable, CustomStringConvertible {
    /// The offline gazetteer file is missing or damaged.
    case gazetteerUnavailable(path: String, reason: String)
    /// `geocoder.minInterval` has not passed since the last request and the cell is not cached.
    case throttled(retryInMilliseconds: Int64)
    /// The HTTP geocoder did not answer, or answered with an error or something unreadable.
    case serviceFailed(String)
    /// The geocoder's cache and throttle file in the state directory cannot be written.
    case cacheNotWritable(String)

    package var description: String {
        switch self {
        case .gazetteerUnavailable(let path, let reason):
            return "the offline gazetteer \(path) cannot be used: \(reason) (reinstall geolocate, or set GEOLOCATE_GAZETTEER)"
        case .throttled(let wait):
            return "the street geocoder was asked less than geocoder.minInterval ago (next request in \(DurationText.format(wait)))"
        case .serviceFailed(let reason):
            return "the street geocoder failed: \(reason)"
        case .cacheNotWritable(let reason):
            return "the street geocoder was not asked, its throttle cannot be kept: \(reason)"
        }
    }
}
