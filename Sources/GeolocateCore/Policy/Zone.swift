import Foundation
import GeolocateModel

/// One area of `policy.zones`: a polygon (with holes), several, or a circle, that allows or
/// denies (SPEC §10.2).
struct Zone: Sendable {
    enum Effect: String, Sendable {
        case allow
        case deny
    }

    enum Shape: Sendable {
        /// A point with a radius in metres.
        case circle(latitude: Double, longitude: Double, radius: Double)
        /// Polygons, each an outer ring and its holes, as Earth-centred vertices; a ring's last
        /// vertex is its first.
        case polygons([[[SIMD3<Double>]]])
    }

    var name: String
    var effect: Effect
    var shape: Shape
    /// The Earth-centred point the zone is gathered around, and the longest chord from it to
    /// a vertex: a cheap test for "far from this zone".
    var centre: SIMD3<Double>
    var reach: Double
}

/// Where a location is relative to one zone.
struct ZoneMeasure: Equatable {
    var inside: Bool
    /// Metres from the location to the zone's nearest boundary.
    var boundaryDistance: Double
}

extension Zone {
    /// Beyond this many metres past a zone's reach, distances are measured on a sphere from
    /// its vertices (0.5 %), not in the local plane (0.02 % within 100 km).
    static let nearMargin = 200_000.0

    /// The location's place relative to the zone.
    func measure(latitude: Double, longitude: Double) -> ZoneMeasure {
        switch shape {
        case .circle(let centreLatitude, let centreLongitude, let radius):
            let distance = Geodesy.distance(latitude1: latitude, longitude1: longitude, latitude2: centreLatitude, longitude2: centreLongitude)
            return ZoneMeasure(inside: distance <= radius, boundaryDistance: abs(radius - distance))
        case .polygons(let polygons):
            let point = Geodesy.ecef(latitude: latitude, longitude: longitude)
            guard simdLength(point - centre) <= reach + Zone.nearMargin else {
                return ZoneMeasure(inside: false, boundaryDistance: Zone.sphericalDistance(from: point, to: polygons))
            }
            let plane = LocalPlane(latitude: latitude, longitude: longitude)
            var inside = false
            var nearest = Double.infinity
            for polygon in polygons {
                var crossings = 0
                for ring in polygon {
                    var previous = plane.project(ring[0])
                    for vertex in ring.dropFirst() {
                        let current = plane.project(vertex)
                        // Even-odd rule on a ray from the location (the origin) towards +x.
                        if (previous.y > 0) != (current.y > 0),
                           previous.x + (current.x - previous.x) * (0 - previous.y) / (current.y - previous.y) > 0 {
                            crossings += 1
                        }
                        nearest = min(nearest, LocalPlane.distanceFromOrigin(toSegment: previous, current))
                        previous = current
                    }
                }
                if crossings % 2 == 1 { inside = true }
            }
            return ZoneMeasure(inside: inside, boundaryDistance: nearest)
        }
    }
}

extension Zone {
    /// The distance from `point` to the nearest edge of `polygons`, on a sphere of the mean
    /// radius with edges as great-circle arcs (0.5 % at worst): for zones far from the point.
    static func sphericalDistance(from point: SIMD3<Double>, to polygons: [[[SIMD3<Double>]]]) -> Double {
        func unit(_ v: SIMD3<Double>) -> SIMD3<Double> { v / simdLength(v) }
        func cross(_ a: SIMD3<Double>, _ b: SIMD3<Double>) -> SIMD3<Double> {
            SIMD3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x)
        }
        func angle(_ a: SIMD3<Double>, _ b: SIMD3<Double>) -> Double { atan2(simdLength(cross(a, b)), (a * b).sum()) }
        let p = unit(point)
        var nearest = Double.pi
        for ring in polygons.joined() {
            var a = unit(ring[0])
            for vertex in ring.dropFirst() {
                let b = unit(vertex)
                var arc = min(angle(p, a), angle(p, b))
                let normal = cross(a, b)
                let length = simdLength(normal)
                if length > 1e-15 {
                    let n = normal / length
                    // The foot of the perpendicular lies on the arc when it is on the inner
                    // side of both end points.
                    if (cross(n, a) * p).sum() >= 0, (cross(b, n) * p).sum() >= 0 {
                        arc = min(arc, abs(asin(max(-1, min(1, (n * p).sum())))))
                    }
                }
                nearest = min(nearest, arc)
                a = b
            }
        }
        return nearest * Geodesy.meanRadius
    }
}

@inline(__always)
func simdLength(_ v: SIMD3<Double>) -> Double { (v * v).sum().squareRoot() }

extension LocalPlane {
    /// A vertex's east and north offsets in metres.
    @inline(__always)
    func project(_ vertex: SIMD3<Double>) -> SIMD2<Double> {
        let d = vertex - origin
        return SIMD2((d * east).sum(), (d * north).sum())
    }

    /// The distance from the plane's origin to the segment from `a` to `b`.
    static func distanceFromOrigin(toSegment a: SIMD2<Double>, _ b: SIMD2<Double>) -> Double {
        let edge = b - a
        let length = (edge * edge).sum()
        let t = length == 0 ? 0 : min(1, max(0, -(a * edge).sum() / length))
        let closest = a + edge * t
        return (closest * closest).sum().squareRoot()
    }
}
