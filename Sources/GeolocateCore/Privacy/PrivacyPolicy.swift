/// How much of a location records may tell (config `privacy.precision`, SPEC §6), from
/// nothing to the coordinates.
///
/// Each level reports the address parts at or above it; only `gpsLocation` reports
/// coordinates (and altitude, speed, course and vertical accuracy, which are as precise).
public enum LocationPrecision: String, Sendable, CaseIterable, Comparable {
    case none = "NONE"
    case country = "COUNTRY"
    case district = "DISTRICT"
    case city = "CITY"
    case street = "STREET"
    case streetNumber = "STREET_NUMBER"
    case gpsLocation = "GPS_LOCATION"

    public static func < (lhs: LocationPrecision, rhs: LocationPrecision) -> Bool { lhs.rank < rhs.rank }

    private var rank: Int { LocationPrecision.allCases.firstIndex(of: self) ?? 0 }

    public static var validValues: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// The fields of the location object this level lets through.
    public var attributes: LocationAttributes {
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
public struct LocationAttributes: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let latitude = LocationAttributes(rawValue: 1 << 0)
    public static let longitude = LocationAttributes(rawValue: 1 << 1)
    public static let accuracy = LocationAttributes(rawValue: 1 << 2)
    public static let altitude = LocationAttributes(rawValue: 1 << 3)
    public static let provider = LocationAttributes(rawValue: 1 << 4)
    public static let permissions = LocationAttributes(rawValue: 1 << 5)
    public static let recordTimestamp = LocationAttributes(rawValue: 1 << 6)
    public static let fixMode = LocationAttributes(rawValue: 1 << 7)
    public static let speed = LocationAttributes(rawValue: 1 << 8)
    public static let course = LocationAttributes(rawValue: 1 << 9)
    public static let verticalAccuracy = LocationAttributes(rawValue: 1 << 10)
    public static let countryCode = LocationAttributes(rawValue: 1 << 11)
    public static let district = LocationAttributes(rawValue: 1 << 12)
    public static let city = LocationAttributes(rawValue: 1 << 13)
    public static let street = LocationAttributes(rawValue: 1 << 14)
    public static let streetNumber = LocationAttributes(rawValue: 1 << 15)

    /// What the fix was and how good, but not where: kept at every precision.
    public static let metadata: LocationAttributes = [.accuracy, .provider, .permissions, .recordTimestamp, .fixMode]
    /// Where exactly: only at `GPS_LOCATION`.
    public static let position: LocationAttributes = [.latitude, .longitude, .altitude, .speed, .course, .verticalAccuracy]
    public static let address: LocationAttributes = [.countryCode, .district, .city, .street, .streetNumber]
    public static let all: LocationAttributes = metadata.union(position).union(address)

    /// Each field by its name in the location object; `coordinates` (Veridium's name) is both
    /// latitude and longitude.
    public static let names: [(name: String, attributes: LocationAttributes)] = [
        ("latitude", .latitude), ("longitude", .longitude), ("coordinates", [.latitude, .longitude]),
        ("accuracy", .accuracy), ("altitude", .altitude), ("provider", .provider), ("permissions", .permissions),
        ("recordTimestamp", .recordTimestamp), ("fixMode", .fixMode), ("speed", .speed), ("course", .course),
        ("verticalAccuracy", .verticalAccuracy), ("countryCode", .countryCode), ("district", .district),
        ("city", .city), ("street", .street), ("streetNumber", .streetNumber),
    ]

    /// Parses a list of field names, given as a comma list or a JSON array.
    /// - Throws: `GeolocateError.usage` naming the valid fields.
    public init(parsingNames names: [String]) throws {
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
public struct Address: Sendable, Equatable {
    /// ISO 3166-1 alpha-2, or `privacy.countryCodeReplacement` when the fix is too inaccurate.
    public var countryCode: String?
    /// The first-level administrative division.
    public var district: String?
    public var city: String?
    public var street: String?
    public var streetNumber: String?

    public init(countryCode: String? = nil, district: String? = nil, city: String? = nil,
                street: String? = nil, streetNumber: String? = nil) {
        self.countryCode = countryCode
        self.district = district
        self.city = city
        self.street = street
        self.streetNumber = streetNumber
    }

    /// Each part with its attribute, its name in Mosaic and Veridium, and in OpenLocate, in
    /// the order records list them.
    static let parts: [(attribute: LocationAttributes, value: KeyPath<Address, String?> & Sendable, name: String, snakeCaseName: String)] = [
        (.countryCode, \.countryCode, "countryCode", "country_code"), (.district, \.district, "district", "district"),
        (.city, \.city, "city", "city"), (.street, \.street, "street", "street"),
        (.streetNumber, \.streetNumber, "streetNumber", "street_number"),
    ]

    /// Only the parts in `attributes`; `nil` when none is left.
    func limited(to attributes: LocationAttributes) -> Address? {
        var address = self
        if !attributes.contains(.countryCode) { address.countryCode = nil }
        if !attributes.contains(.district) { address.district = nil }
        if !attributes.contains(.city) { address.city = nil }
        if !attributes.contains(.street) { address.street = nil }
        if !attributes.contains(.streetNumber) { address.streetNumber = nil }
        return address == Address() ? nil : address
    }
}

/// The `privacy.*` settings: what records may tell about where the device is.
public struct PrivacyPolicy: Sendable, Equatable {
    public var precision: LocationPrecision
    /// A country code is reported only from a fix whose 68 % radius is within this many metres.
    public var accuracyThresholdMetres: Double
    /// Reported instead of the country code when the fix is not accurate enough (or its accuracy unknown).
    public var countryCodeReplacement: String
    /// `privacy.locationAttributeFilter`: the fields let through, whatever the precision.
    public var attributeFilter: LocationAttributes

    public init(precision: LocationPrecision = ConfigKey.privacyPrecision.builtInValue,
                accuracyThresholdMetres: Double = ConfigKey.privacyAccuracyThreshold.builtInValue,
                countryCodeReplacement: String = ConfigKey.privacyCountryCodeReplacement.builtInValue,
                attributeFilter: LocationAttributes = ConfigKey.privacyLocationAttributeFilter.builtInValue) {
        self.precision = precision
        self.accuracyThresholdMetres = accuracyThresholdMetres
        self.countryCodeReplacement = countryCodeReplacement
        self.attributeFilter = attributeFilter
    }

    /// The fields a location object may carry: the precision's, narrowed by the filter.
    public var attributes: LocationAttributes {
        precision.attributes.intersection(attributeFilter)
    }

    /// The country code to report for a fix: the code when the fix is accurate enough.
    func countryCode(_ code: String, for fix: Fix) -> String {
        guard let accuracy = fix.horizontalAccuracy, accuracy <= accuracyThresholdMetres else { return countryCodeReplacement }
        return code
    }
}

/// Why an address could not be found; the record still goes out, with errorCode 1053.
public enum GeocodingError: Error, Equatable, CustomStringConvertible {
    /// The offline gazetteer file is missing or damaged.
    case gazetteerUnavailable(path: String, reason: String)
    /// `geocoder.minInterval` has not passed since the last request and the cell is not cached.
    case throttled(retryInMilliseconds: Int64)
    /// The HTTP geocoder did not answer, or answered with an error or something unreadable.
    case serviceFailed(String)
    /// The geocoder's cache and throttle file in the state directory cannot be written.
    case cacheNotWritable(String)

    public var description: String {
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
