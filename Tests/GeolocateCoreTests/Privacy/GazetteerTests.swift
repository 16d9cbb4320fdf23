import Foundation
@testable import GeolocateConfig
@testable import GeolocateCore
@testable import GeolocateDelivery
@testable import GeolocateModel
@testable import GeolocateSpool
import Testing
import TestSupport

/// The offline gazetteer: the right country, district and city for well-known places, and the
/// same nearest place as a scan of every place in the file.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct GazetteerTests {
    let gazetteer: Gazetteer

    init() throws {
        gazetteer = try Gazetteer(path: TestPaths.projectRoot.appendingPathComponent("share/geolocate/gazetteer.bin").path)
    }

    @Test(arguments: [
        ("Dublin", 53.3498, -6.2603, "IE", "Leinster"), ("Paris", 48.8566, 2.3522, "FR", "Ile-de-France"),
        ("Tokyo", 35.6895, 139.6917, "JP", "Tokyo"), ("Canberra", -35.2809, 149.1300, "AU", "Australian Capital Territory"),
        ("Washington, D.C.", 38.8951, -77.0364, "US", "Washington, D.C."), ("Brasilia", -15.7939, -47.8828, "BR", "Federal District"),
        ("Nairobi", -1.2864, 36.8172, "KE", "Nairobi Area"), ("Ottawa", 45.4215, -75.6972, "CA", "Ontario"),
        ("Buenos Aires", -34.6037, -58.3816, "AR", "Buenos Aires F.D."), ("Wellington", -41.2865, 174.7762, "NZ", "Wellington"),
    ])
    func capitals(_ city: String, _ latitude: Double, _ longitude: Double, _ country: String, _ district: String) throws {
        let place = try #require(gazetteer.nearest(latitude: latitude, longitude: longitude))
        #expect(place.city == city)
        #expect(place.countryCode == country)
        #expect(place.district == district)
    }

    /// Twin towns a river or a street apart: each side of the border keeps its own country.
    @Test(arguments: [
        ("Goerlitz", 51.1550, 14.9870, "DE"), ("Zgorzelec", 51.1500, 15.0080, "PL"),
        ("Valga", 57.7770, 26.0470, "EE"), ("Valka", 57.7750, 26.0170, "LV"),
        ("Tornio", 65.8480, 24.1470, "FI"), ("Haparanda", 65.8355, 24.1368, "SE"),
        ("El Paso", 31.7619, -106.4850, "US"), ("Ciudad Juarez", 31.6904, -106.4245, "MX"),
        ("Frankfurt (Oder)", 52.3470, 14.5506, "DE"), ("Slubice", 52.3500, 14.5600, "PL"),
        ("Strasbourg", 48.5734, 7.7521, "FR"), ("Kehl", 48.5726, 7.8150, "DE"),
    ])
    func borderTowns(_ city: String, _ latitude: Double, _ longitude: Double, _ country: String) throws {
        let place = try #require(gazetteer.nearest(latitude: latitude, longitude: longitude))
        #expect(place.city == city)
        #expect(place.countryCode == country)
    }

    /// Across the antimeridian, near the poles and at sea, the grid search still finds the
    /// nearest place: 300 seeded points against a scan of all 144,561.
    @Test func agreesWithAScanOfEveryPlace() throws {
        let places = try AllPlaces(path: TestPaths.projectRoot.appendingPathComponent("share/geolocate/gazetteer.bin").path)
        var generator = SplitMix64(state: 6)
        var points: [(Double, Double)] = [(89.99, 0), (-89.99, 0), (-89.99, 179.9), (85, 179.99), (78.2, 15.6), (-16.8, 179.999), (-16.8, -179.999), (0, 0), (-50, -140)]
        for _ in 0..<300 {
            points.append((Double.random(in: -90...90, using: &generator), Double.random(in: -180..<180, using: &generator)))
        }
        for (latitude, longitude) in points {
            let found = try #require(gazetteer.nearest(latitude: latitude, longitude: longitude))
            let expected = places.nearest(latitude: latitude, longitude: longitude)
            // Equal, or a tie the scan broke the other way.
            #expect(abs(AllPlaces.metres(latitude, longitude, found.latitude, found.longitude) - expected) < 0.01,
                    "at \(latitude), \(longitude): \(found.city) vs a place \(expected) m away")
        }
    }

    @Test func aMissingOrForeignFileIsAGeocodingError() throws {
        #expect(throws: GeocodingError.self) { try Gazetteer(path: "/nonexistent/gazetteer.bin") }
        let foreign = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-gazetteer-\(UUID()).bin")
        try Data(repeating: 7, count: 4096).write(to: foreign)
        defer { try? FileManager.default.removeItem(at: foreign) }
        #expect(throws: GeocodingError.self) { try Gazetteer(path: foreign.path) }
    }
}

/// Every place of the file, read by the layout `scripts/make-gazetteer.py` documents, for a
/// brute-force nearest search independent of the grid.
struct AllPlaces {
    var coordinates: [(Double, Double)] = []

    init(path: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        func word(_ offset: Int) -> UInt32 { data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) } }
        let count = Int(word(8)), cells = Int(word(20)) * Int(word(24)) + 1
        let start = 32 + cells * 4
        for index in 0..<count {
            let offset = start + index * 16
            let latitude = data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: Int32.self) }
            let longitude = data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 4, as: Int32.self) }
            coordinates.append((Double(latitude) / 1e5, Double(longitude) / 1e5))
        }
    }

    /// The distance to the nearest place, in metres.
    func nearest(latitude: Double, longitude: Double) -> Double {
        coordinates.map { AllPlaces.metres(latitude, longitude, $0.0, $0.1) }.min() ?? .infinity
    }

    static func metres(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let phi1 = lat1 * .pi / 180, phi2 = lat2 * .pi / 180
        let a = pow(sin((phi2 - phi1) / 2), 2) + cos(phi1) * cos(phi2) * pow(sin((lon2 - lon1) * .pi / 360), 2)
        return 2 * 6_371_008.8 * asin(min(1, sqrt(a)))
    }
}
