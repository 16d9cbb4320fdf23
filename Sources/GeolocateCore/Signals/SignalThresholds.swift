import GeolocateConfig

/// The thresholds of `signals.*` (SPEC §10.1).
package struct SignalThresholds: Sendable, Equatable {
    /// Metres per second: faster travel between two reports is a jump.
    package var maxSpeed: Double
    /// A country change counts when the reports are at most this far apart in time.
    package var countryWindowMilliseconds: Int64
    package var staleAfterMilliseconds: Int64
    /// Metres: a less accurate fix, or one of unknown accuracy, is inaccurate.
    package var maxAccuracy: Double
    /// A live fix whose time is further than this from a synchronised system clock when it
    /// arrives is clockSkewed.
    package var maxClockSkewMilliseconds: Int64
    /// dB-Hz: satellites closer together in C/N0 than this look simulated.
    package var minCn0StdDev: Double
    /// A jamming indicator (0 to 255) above this is jammed.
    package var maxJamming: Int

    /// Mean C/N0 above which the signals are stronger than open sky gives (dB-Hz).
    package static let maxCn0Mean = 55.0
    /// A Wi-Fi access point change between reports this close, with the fix put, is a reason.
    package static let wifiChangeWindowMilliseconds: Int64 = 60_000
    /// The fewest satellites whose C/N0 spread says anything.
    package static let minSatellitesForSpread = 5
    /// The fewest satellites that, unchanged across a jump, say the jump was not travel: a
    /// 3D fix needs 4.
    package static let minSatellitesForJump = 4

    package init(settings: Settings = Settings()) {
        maxSpeed = settings[ConfigKey.signalsMaxSpeed]
        countryWindowMilliseconds = settings[ConfigKey.signalsCountryWindow]
        staleAfterMilliseconds = settings[ConfigKey.signalsStaleAfter]
        maxAccuracy = settings[ConfigKey.signalsMaxAccuracy]
        maxClockSkewMilliseconds = settings[ConfigKey.signalsMaxClockSkew]
        minCn0StdDev = settings[ConfigKey.signalsMinCn0StdDev]
        maxJamming = settings[ConfigKey.signalsMaxJamming]
    }
}
