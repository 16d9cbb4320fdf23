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
