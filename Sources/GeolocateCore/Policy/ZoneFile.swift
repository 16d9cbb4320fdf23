import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import NMEA

/// Reads `policy.zones`: a GeoJSON FeatureCollection (RFC 7946) of named zones.
enum ZoneFile {
    /// Zones files hold hundreds of thousands of vertices in this; a larger one would take
    /// many times its size in memory to read.
    static let maximumBytes = 16 * 1024 * 1024

    /// The zones in the file at `path`.
    /// - Throws: `GeolocateError.configuration` naming the file and, for a bad feature, its
    ///   index (from 0) and name; `GeolocateError.permissionDenied` for a file this user may
    ///   not read.
    static func load(path: String) throws -> [Zone] {
        switch BoundedFile.read(path, limit: maximumBytes) {
        case .success(let data):
            return try parse(data, path: path)
        case .failure(.unreadable(let code)) where code == EACCES || code == EPERM:
            throw GeolocateError.permissionDenied(path: path, writing: false, uid: geteuid())
        case .failure(let failure):
            // A file that is not there cannot be fixed or moved away: say how to name one.
            let advice = failure == .missing ? "write it, or set another: geolocate config set policy.zones FILE" : nil
            throw GeolocateError.configuration(file: path, line: nil, reason: "the policy.zones file \(failure.text(limit: maximumBytes))",
                                               advice: advice)
        }
    }

    /// The zones in `data`, read from `path`.
    static func parse(_ data: Data, path: String) throws -> [Zone] {
        func fail(_ reason: String) -> GeolocateError { .configuration(file: path, line: nil, reason: reason) }
        let document: JSONNode
        do {
            document = try JSONScanner.parse([UInt8](data))
        } catch let error as JSONScanner.Malformed {
            throw GeolocateError.configuration(file: path, line: error.line(in: data), reason: error.reason(in: data))
        } catch let duplicate as JSONScanner.DuplicateKey {
            throw GeolocateError.configuration(file: path, line: duplicate.line(in: data), reason: duplicate.reason)
        }
        guard document.member("type")?.string == "FeatureCollection", let features = document.member("features")?.array else {
            throw fail("not a GeoJSON FeatureCollection (RFC 7946) with a \"features\" list")
        }
        var zones: [Zone] = []
        var names: Set<String> = []
        for (index, feature) in features.enumerated() {
            func featureFail(_ reason: String, name: String? = nil) -> GeolocateError {
                fail("feature \(index)\(name.map { " (\(JSONWriter.quoted($0)))" } ?? ""): \(reason)")
            }
            guard feature.member("type")?.string == "Feature" else { throw featureFail("not a Feature") }
            let properties = feature.member("properties")
            guard let name = properties?.member("name")?.string, !name.isEmpty else {
                throw featureFail("no \"name\" property (each zone needs a unique name, as text)")
            }
            guard name.utf8.count <= 200 else { throw featureFail("its name is longer than 200 bytes") }
            guard names.insert(name).inserted else { throw featureFail("another feature has the same name", name: name) }
            // Absent or null is allow; anything but the two words (text or not) is refused.
            let effectText = properties?.member("effect").flatMap { $0.isNull ? nil : ($0.string ?? "") } ?? "allow"
            guard let effect = Zone.Effect(rawValue: effectText) else {
                throw featureFail("\"effect\" must be allow or deny", name: name)
            }
            guard let geometry = feature.member("geometry"), let type = geometry.member("type")?.string else {
                throw featureFail("no geometry", name: name)
            }
            do {
                zones.append(try zone(name: name, effect: effect, type: type, coordinates: geometry.member("coordinates"),
                                      radius: properties?.member("radius")?.number))
            } catch let reason as GeometryProblem {
                throw featureFail(reason.text, name: name)
            }
        }
        return zones
    }

    private struct GeometryProblem: Error {
        var text: String
    }

    private static func zone(name: String, effect: Zone.Effect, type: String, coordinates: JSONNode?, radius: Double?) throws -> Zone {
        switch type {
        case "Point":
            let position = try position(coordinates)
            guard let radius, radius.isFinite, radius > 0, radius <= 20_000_000 else {
                throw GeometryProblem(text: "a Point needs a numeric \"radius\" property in metres, above 0 and at most 20000000")
            }
            let centre = Geodesy.ecef(latitude: position.latitude, longitude: position.longitude)
            return Zone(name: name, effect: effect, shape: .circle(latitude: position.latitude, longitude: position.longitude, radius: radius),
                        centre: centre, reach: radius)
        case "Polygon":
            return try polygonZone(name: name, effect: effect, polygons: [try polygon(coordinates)])
        case "MultiPolygon":
            guard let list = coordinates?.array, !list.isEmpty else { throw GeometryProblem(text: "a MultiPolygon needs a list of polygons") }
            return try polygonZone(name: name, effect: effect, polygons: try list.map(polygon))
        default:
            throw GeometryProblem(text: "a \(type) cannot be a zone (use Polygon, MultiPolygon, or Point with a radius)")
        }
    }

    /// The most a polygon zone may reach from its centre, in degrees of arc: the local plane
    /// the geometry is done in must see every vertex from a location near the zone.
    static let maximumAngularRadius = 40.0

    private static func polygonZone(name: String, effect: Zone.Effect, polygons: [[[SIMD3<Double>]]]) throws -> Zone {
        let vertices = polygons.joined().joined()
        let centre = vertices.reduce(SIMD3<Double>.zero, +) / Double(vertices.count)
        let length = simdLength(centre)
        let widest = length < 1 ? 180 : vertices.map { acos(max(-1, min(1, ($0 * centre).sum() / (simdLength($0) * length)))) * 180 / .pi }.max() ?? 0
        guard widest <= maximumAngularRadius else {
            throw GeometryProblem(text: "the polygon reaches \(Int(widest.rounded()))° of arc from its centre; a zone may reach at most 40° (4,400 km): split it, or use policy.countries")
        }
        let reach = vertices.map { simdLength($0 - centre) }.max() ?? 0
        return Zone(name: name, effect: effect, shape: .polygons(polygons), centre: centre, reach: reach)
    }

    private static func polygon(_ value: JSONNode?) throws -> [[SIMD3<Double>]] {
        guard let rings = value?.array, !rings.isEmpty else { throw GeometryProblem(text: "a polygon needs a list of rings") }
        return try rings.enumerated().map { index, ring in
            guard let positions = ring.array, positions.count >= 4 else {
                throw GeometryProblem(text: "polygon ring \(index) needs at least 4 positions (the last repeating the first)")
            }
            let points = try positions.map(position)
            guard points.first! == points.last! else {
                throw GeometryProblem(text: "polygon ring \(index) is not closed (its last position must repeat its first)")
            }
            return points.map { Geodesy.ecef(latitude: $0.latitude, longitude: $0.longitude) }
        }
    }

    /// A GeoJSON position: [longitude, latitude], degrees in range.
    private static func position(_ value: JSONNode?) throws -> (longitude: Double, latitude: Double) {
        guard let numbers = value?.array, numbers.count >= 2, let longitude = numbers[0].number, let latitude = numbers[1].number else {
            throw GeometryProblem(text: "a position must be [longitude, latitude] in numbers")
        }
        guard FixLimits.isValidPosition(latitude: latitude, longitude: longitude) else {
            throw GeometryProblem(text: "coordinates out of range ([\(longitude), \(latitude)]: longitude -180 to 180, latitude -90 to 90)")
        }
        return (longitude, latitude)
    }
}
