import Foundation

/// Distances on the WGS-84 ellipsoid, and a local plane for the geometry of zones.
package enum Geodesy {
    /// WGS-84 semi-major axis, metres.
    package static let a = 6_378_137.0
    /// WGS-84 flattening.
    package static let f = 1 / 298.257223563
    package static let b = a * (1 - f)
    /// First eccentricity squared.
    package static let e2 = f * (2 - f)
    /// The WGS-84 mean radius (2a + b) / 3 to a decimetre, metres: the sphere of every
    /// spherical measure (the great circle, the gazetteer's bounds, distances to far zones).
    package static let meanRadius = 6_371_008.8

    /// The geodesic distance in metres between two points (degrees), by Vincenty's inverse
    /// formula, good to a millimetre; for nearly antipodal points, where it does not converge,
    /// the great-circle distance on a sphere of the mean radius (0.5 % at worst).
    package static func distance(latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double) -> Double {
        let radians = Double.pi / 180
        // Consecutive track records are metres apart: there the ellipsoid's radii of curvature
        // at the mean latitude give the distance to 0.001 % (the error grows as (d/R)²), at a
        // fifth of Vincenty's cost.
        let dLat = latitude2 - latitude1
        var dLon = longitude2 - longitude1
        if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
        if abs(dLat) < 0.1 && abs(dLon) < 0.1 && abs(latitude1) < 89 {
            let mean = (latitude1 + latitude2) / 2 * radians
            let sinMean = sin(mean)
            let w = 1 - e2 * sinMean * sinMean
            let n = a / w.squareRoot()
            let m = a * (1 - e2) / (w * w.squareRoot())
            let x = dLon * radians * n * cos(mean), y = dLat * radians * m
            return (x * x + y * y).squareRoot()
        }
        return vincenty(latitude1: latitude1, longitude1: longitude1, latitude2: latitude2, longitude2: longitude2)
    }

    /// Vincenty's inverse formula; the great circle where it does not converge.
    package static func vincenty(latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double) -> Double {
        let radians = Double.pi / 180
        let l = (longitude2 - longitude1) * radians
        let u1 = atan((1 - f) * tan(latitude1 * radians)), u2 = atan((1 - f) * tan(latitude2 * radians))
        let sinU1 = sin(u1), cosU1 = cos(u1), sinU2 = sin(u2), cosU2 = cos(u2)
        var lambda = l
        for _ in 0..<200 {
            let sinLambda = sin(lambda), cosLambda = cos(lambda)
            let sinSigma = ((cosU2 * sinLambda) * (cosU2 * sinLambda)
                + (cosU1 * sinU2 - sinU1 * cosU2 * cosLambda) * (cosU1 * sinU2 - sinU1 * cosU2 * cosLambda)).squareRoot()
            if sinSigma == 0 { return 0 }
            let cosSigma = sinU1 * sinU2 + cosU1 * cosU2 * cosLambda
            let sigma = atan2(sinSigma, cosSigma)
            let sinAlpha = cosU1 * cosU2 * sinLambda / sinSigma
            let cos2Alpha = 1 - sinAlpha * sinAlpha
            let cos2SigmaM = cos2Alpha == 0 ? 0 : cosSigma - 2 * sinU1 * sinU2 / cos2Alpha
            let c = f / 16 * cos2Alpha * (4 + f * (4 - 3 * cos2Alpha))
            let previous = lambda
            lambda = l + (1 - c) * f * sinAlpha
                * (sigma + c * sinSigma * (cos2SigmaM + c * cosSigma * (-1 + 2 * cos2SigmaM * cos2SigmaM)))
            if abs(lambda - previous) < 1e-12 {
                let uSquared = cos2Alpha * (a * a - b * b) / (b * b)
                let bigA = 1 + uSquared / 16384 * (4096 + uSquared * (-768 + uSquared * (320 - 175 * uSquared)))
                let bigB = uSquared / 1024 * (256 + uSquared * (-128 + uSquared * (74 - 47 * uSquared)))
                let deltaSigma = bigB * sinSigma * (cos2SigmaM + bigB / 4 * (cosSigma * (-1 + 2 * cos2SigmaM * cos2SigmaM)
                    - bigB / 6 * cos2SigmaM * (-3 + 4 * sinSigma * sinSigma) * (-3 + 4 * cos2SigmaM * cos2SigmaM)))
                return b * bigA * (sigma - deltaSigma)
            }
        }
        return greatCircle(latitude1: latitude1, longitude1: longitude1, latitude2: latitude2, longitude2: longitude2)
    }

    /// The great-circle distance on a sphere of the WGS-84 mean radius (haversine).
    package static func greatCircle(latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double) -> Double {
        let radians = Double.pi / 180
        let dLat = (latitude2 - latitude1) * radians, dLon = (longitude2 - longitude1) * radians
        let h = sin(dLat / 2) * sin(dLat / 2) + cos(latitude1 * radians) * cos(latitude2 * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * meanRadius * asin(min(1, h.squareRoot()))
    }

    /// The great-circle distance in metres between two fixes' positions: what track's
    /// `--distance` and stay detection measure.
    ///
    /// The sphere, not the ellipsoid of `distance`: it is good to 0.5 %, far finer than the
    /// 200 m thresholds it decides, and it is what the test log generator's truth measures
    /// (`TrackerTests`), so emissions fall on the same fixes.
    package static func greatCircle(_ a: Fix, _ b: Fix) -> Double {
        greatCircle(latitude1: a.latitude, longitude1: a.longitude, latitude2: b.latitude, longitude2: b.longitude)
    }

    /// Earth-centred, Earth-fixed coordinates (metres) of a point on the ellipsoid.
    package static func ecef(latitude: Double, longitude: Double) -> SIMD3<Double> {
        let radians = Double.pi / 180
        let sinLat = sin(latitude * radians), cosLat = cos(latitude * radians)
        let n = a / (1 - e2 * sinLat * sinLat).squareRoot()
        return SIMD3(n * cosLat * cos(longitude * radians), n * cosLat * sin(longitude * radians), n * (1 - e2) * sinLat)
    }
}

/// The plane tangent to the ellipsoid at one point, east and north in metres: within 100 km
/// of that point, distances in it differ from geodesic ones by under 0.01 %, at any latitude
/// and across the antimeridian, because it is built from Earth-centred coordinates, not from
/// degrees.
package struct LocalPlane {
    package let origin: SIMD3<Double>
    package let east: SIMD3<Double>
    package let north: SIMD3<Double>

    package init(latitude: Double, longitude: Double) {
        let radians = Double.pi / 180
        let sinLat = sin(latitude * radians), cosLat = cos(latitude * radians)
        let sinLon = sin(longitude * radians), cosLon = cos(longitude * radians)
        origin = Geodesy.ecef(latitude: latitude, longitude: longitude)
        east = SIMD3(-sinLon, cosLon, 0)
        north = SIMD3(-sinLat * cosLon, -sinLat * sinLon, cosLat)
    }
}
