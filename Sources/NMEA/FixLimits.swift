/// The range checks every fix passes where it is read (SPEC §8: a fix with coordinates,
/// accuracy, speed or course out of range is not a fix).
///
/// Fixes are built only through a `checked` function (`NMEAFix.checked`, and the model's
/// `Fix.checked` for any other source), and raw error figures (DOPs, sigmas, 95 % radii) pass
/// through `errorFigure` before they are converted. A position out of range is no fix at all; any other value out of range
/// becomes unknown (`nil`), as a missing field would.
public enum FixLimits {
    /// Metres per second: about twice the 515 m/s (1,000 knots) above which civil receivers
    /// stop reporting (the COCOM limit). Faster is a receiver or protocol error.
    public static let maxSpeed = 1_000.0
    /// Metres, for both height above the ellipsoid and above sea level: from below the Dead Sea
    /// shore (−430 m MSL, −500 m HAE) with margin, to the edge of space (100 km).
    public static let altitudeRange = -1_000.0...100_000.0
    /// A live fix dated more than this ahead of the system clock is not a fix (one day, SPEC §8):
    /// gpsd and receivers can report a wrong date after a GPS week rollover or a bad almanac,
    /// while a real clock difference is seconds.
    public static let maxFutureSkewMilliseconds: Int64 = 86_400_000
    /// The GPS epoch, 1980-01-06, in milliseconds since 1970: no live fix or stored last-known
    /// location is older. An earlier date is a receiver that lost its almanac or a forged
    /// report, and as a last-known location it would outlive every real fix.
    public static let earliestTimestamp: Int64 = 315_964_800_000

    /// Whether `latitude` and `longitude` are finite and within ±90° and ±180°.
    public static func isValidPosition(latitude: Double, longitude: Double) -> Bool {
        latitude.isFinite && longitude.isFinite && abs(latitude) <= 90 && abs(longitude) <= 180
    }

    /// An error figure (DOP, sigma, 95 % radius) when it is finite and not negative, else `nil`.
    public static func errorFigure(_ value: Double?) -> Double? {
        // Zero is no figure either: no receiver is perfect, and 0 would claim it.
        guard let value, value.isFinite, value > 0 else { return nil }
        return value
    }

    /// A speed in m/s when finite, not negative and at most `maxSpeed`, else `nil`.
    public static func speed(_ value: Double?) -> Double? {
        guard let value, value.isFinite, value >= 0, value <= maxSpeed else { return nil }
        return value
    }

    /// A course in degrees when finite and in [0, 360), else `nil`.
    public static func course(_ value: Double?) -> Double? {
        guard let value, value.isFinite, value >= 0, value < 360 else { return nil }
        return value
    }

    /// An altitude in metres when finite and within `altitudeRange`, else `nil`.
    public static func altitude(_ value: Double?) -> Double? {
        guard let value, value.isFinite, altitudeRange.contains(value) else { return nil }
        return value
    }
}
