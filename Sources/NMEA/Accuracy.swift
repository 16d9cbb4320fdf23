/// Conversions from receiver error figures to the 68 % radius records report.
///
/// A circular normal error with per-axis sigma σ has its p-quantile radius at
/// σ·√(−2 ln(1−p)): 1.5096 σ at 68 %, 2.4477 σ at 95 %, so r68 = r95 × 0.617.
public enum Accuracy {
    /// r68 / σ for a circular normal error.
    public static let radius68PerSigma = 1.5096
    /// r68 / r95, for a 95 % radius.
    public static let from95To68 = 0.617
    /// User equivalent range error (one sigma) assumed when a receiver gives only DOPs, in metres.
    public static let userEquivalentRangeError = 5.0
    /// Knots to metres per second.
    public static let metresPerSecondPerKnot = 1852.0 / 3600.0

    /// The 68 % radius from GST's one-sigma latitude and longitude errors.
    public static func horizontal(sigmaLatitude: Double, sigmaLongitude: Double) -> Double {
        radius68PerSigma * ((sigmaLatitude * sigmaLatitude + sigmaLongitude * sigmaLongitude) / 2).squareRoot()
    }

    /// The 68 % radius from HDOP: per-axis σ = HDOP × UERE / √2.
    public static func horizontal(hdop: Double) -> Double {
        radius68PerSigma * hdop * userEquivalentRangeError / 2.0.squareRoot()
    }

    /// The 68 % vertical error from VDOP: σ = VDOP × UERE.
    public static func vertical(vdop: Double) -> Double {
        vdop * userEquivalentRangeError
    }
}
