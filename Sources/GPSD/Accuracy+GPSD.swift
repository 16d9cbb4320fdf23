import NMEA

/// gpsd's error figures (95 % per axis and radius) as the 68 % values records report.
extension Accuracy {
    /// Per-axis 95 % error / σ for a normal error, as in gpsd's `epx`, `epy` and `epv`.
    public static let perAxis95PerSigma = 1.96

    /// The 68 % radius from gpsd's 95 % horizontal radius `eph`.
    public static func horizontal(eph95: Double) -> Double {
        eph95 * from95To68
    }

    /// The 68 % radius from gpsd's per-axis 95 % errors `epx` and `epy`, for when `eph` is missing.
    public static func horizontal(epx95: Double, epy95: Double) -> Double {
        horizontal(sigmaLatitude: epy95 / perAxis95PerSigma, sigmaLongitude: epx95 / perAxis95PerSigma)
    }

    /// One sigma in altitude from gpsd's 95 % vertical error `epv`.
    public static func vertical(epv95: Double) -> Double {
        epv95 / perAxis95PerSigma
    }
}
