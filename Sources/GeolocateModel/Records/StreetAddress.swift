/// The street and house number at a point, as the HTTP geocoder tells them; both `nil` where
/// it knows none (at sea, in a field).
package struct StreetAddress: Sendable, Equatable, Codable {
    package var street: String?
    package var streetNumber: String?

    package init(street: String? = nil, streetNumber: String? = nil) {
        self.street = street
        self.streetNumber = streetNumber
    }
}
