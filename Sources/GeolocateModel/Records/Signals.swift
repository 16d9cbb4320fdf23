import NMEA

/// What a record says to a risk engine beyond where the device is (SPEC §10.1): impossible
/// travel, a country change, a stale, inaccurate, replayed or spoofed fix.
///
/// Computed on the device, offline, for every record with a location; it never fails or
/// delays a record.
package struct Signals: Sendable, Equatable {
    /// The last report with a location made on this device before this one.
    package struct Previous: Sendable, Equatable {
        /// Its fix time, milliseconds since 1970.
        package var recordTimestamp: Int64
        /// Geodesic metres from it to this record's location; withheld below `GPS_LOCATION`.
        package var distance: Double?
        /// Its country code; withheld when the precision withholds country codes.
        package var countryCode: String?

        package init(recordTimestamp: Int64, distance: Double?, countryCode: String?) {
            self.recordTimestamp = recordTimestamp
            self.distance = distance
            self.countryCode = countryCode
        }
    }

    /// `nil` when there is no earlier report.
    package var previous: Previous?
    /// Metres per second from the previous report; `nil` without one, when no time passed, or withheld.
    package var impliedSpeed: Double?
    package var jumped = false
    package var countryChanged = false
    package var stale = false
    package var inaccurate = false
    package var replayed = false
    /// System time at arrival minus the fix's time, for a fix from a live source.
    package var clockSkewMilliseconds: Int64?
    /// The skew is beyond `signals.maxClockSkew` while the system clock is synchronised.
    package var clockSkewed = false
    /// Whether the kernel said the system clock was synchronised, for a live fix; `nil` for
    /// replays or when unknown. Unsynchronised, a skew says the system clock is wrong.
    package var systemClockSynchronized: Bool?
    /// The receiver did not measure the fix: dead reckoning, manual input or a simulator.
    package var estimatedFix = false
    package var satellites: SatelliteSummary?
    package var spoofingSuspected = false
    /// The receiver's jamming indicator (0 to 255) as gpsd reported it with the fix; `nil`
    /// when it did not, and then `jammed` is left out of records too.
    package var jamming: Int?
    /// `jamming` is above `signals.maxJamming`.
    package var jammed = false
    /// The antenna's state as gpsd reported it with the fix; `nil` when unknown, and then
    /// `antennaFault` is left out of records too.
    package var antenna: Fix.Antenna?
    /// The antenna is open or shorted: the fix may come from another antenna than the
    /// device's own, or none at all.
    package var antennaFault = false
    /// Whether the receiver powers its antenna, as gpsd reported it; `nil` when unknown.
    package var antennaPower: Fix.AntennaPower?
    /// The receiver's own verdicts through UBX (SPEC §15), each `nil` when it said nothing:
    /// whether OSNMA authenticated the fix, whether it detects spoofing, critical jamming, or
    /// a replayed navigation message (OSNMA's time synchronisation).
    package var gnssAuthenticated: Bool?
    package var receiverSpoofing: Bool?
    package var receiverJamming: Bool?
    package var osnmaReplay: Bool?
    /// SEC-OSNMA's status and the satellites it authenticated, for a token's `gnssAuth`.
    package var osnmaStatus: ReceiverVerdict.OSNMAStatus?
    package var authenticatedSatellites: Int?
    /// One short English line per signal that is true, each starting with the signal's name.
    package var reasons: [String] = []

    package init() {}

    /// The signals without the figures that tell where the device is or was: what records
    /// carry below `GPS_LOCATION` precision. The booleans stay; each reason line keeps its
    /// signal's name and loses its figures.
    package func withoutFigures(keepingCountry: Bool) -> Signals {
        var signals = self
        signals.previous?.distance = nil
        if !keepingCountry { signals.previous?.countryCode = nil }
        signals.impliedSpeed = nil
        signals.reasons = reasons.map(Signals.plainReason)
        return signals
    }

    /// A reason line in words only, from its signal's name (the text before the colon).
    package static func plainReason(_ line: String) -> String {
        let name = line.split(separator: ":", maxSplits: 1).first.map(String.init) ?? line
        return plainReasons[name].map { "\(name): \($0)" } ?? name
    }

    /// Each reason in words only, by signal name.
    package static let plainReasons: [String: String] = [
        "jumped": "moved faster than signals.maxSpeed allows since the previous report",
        "countryChanged": "in another country than the previous report within signals.countryWindow",
        "stale": "the fix is older than signals.staleAfter",
        "inaccurate": "the fix is less accurate than signals.maxAccuracy, or its accuracy is unknown",
        "replayed": "the fix comes from an NMEA replay",
        "clockSkewed": "the fix's time is off the synchronised system clock by more than signals.maxClockSkew",
        "estimatedFix": "the receiver did not measure the fix (dead reckoning, manual input or a simulator)",
        "spoofingSuspected": "the satellites' signal strengths look simulated, or a live receiver reports simulator output",
        "wifiChanged": "the Wi-Fi access point changed while the fix stayed put",
        "jammed": "the receiver's jamming indicator is above signals.maxJamming",
        "antennaFault": "the receiver reports its antenna open or shorted",
        "receiverSpoofing": "the receiver's own spoofing detection reports spoofing (UBX SEC-SIG or NAV-STATUS)",
        "receiverJamming": "the receiver's own jamming detection reports critical jamming (UBX SEC-SIG)",
        "osnmaReplay": "Galileo OSNMA's time synchronisation says the navigation message is replayed (UBX SEC-OSNMA)",
        "previousNotKept": "this report could not be kept for the next one to be compared with",
    ]

    /// The true booleans as bits, for the spool; bits 8 and 9 say whether
    /// `systemClockSynchronized` is known and its value; 10 and 11 are `jammed` and `antennaFault`.
    package var flags: Int64 {
        var bits: Int64 = 0
        let booleans = [jumped, countryChanged, stale, inaccurate, replayed, spoofingSuspected, clockSkewed, estimatedFix,
                        systemClockSynchronized != nil, systemClockSynchronized == true, jammed, antennaFault]
        for (index, on) in booleans.enumerated() where on {
            bits |= 1 << index
        }
        return bits
    }

    /// Sets the booleans from `flags`.
    package mutating func setFlags(_ bits: Int64) {
        func bit(_ index: Int) -> Bool { bits & (1 << index) != 0 }
        (jumped, countryChanged, stale, inaccurate, replayed, spoofingSuspected) = (bit(0), bit(1), bit(2), bit(3), bit(4), bit(5))
        (clockSkewed, estimatedFix) = (bit(6), bit(7))
        systemClockSynchronized = bit(8) ? bit(9) : nil
        (jammed, antennaFault) = (bit(10), bit(11))
    }

    /// Whether `signal` fired.
    package func fired(_ signal: DistrustedSignal) -> Bool {
        switch signal {
        case .jumped: return jumped
        case .spoofingSuspected: return spoofingSuspected
        case .clockSkewed: return clockSkewed
        case .estimatedFix: return estimatedFix
        case .stale: return stale
        case .replayed: return replayed
        case .inaccurate: return inaccurate
        case .countryChanged: return countryChanged
        case .jammed: return jammed
        case .antennaFault: return antennaFault
        case .receiverSpoofing: return receiverSpoofing == true
        case .receiverJamming: return receiverJamming == true
        case .osnmaReplay: return osnmaReplay == true
        }
    }
}

/// The signals `policy.distrust` can name: evidence against access when they fire (SPEC §10.2).
package enum DistrustedSignal: String, Sendable, CaseIterable {
    case jumped
    case spoofingSuspected
    case clockSkewed
    case estimatedFix
    case stale
    case replayed
    case inaccurate
    case countryChanged
    case jammed
    case antennaFault
    case receiverSpoofing
    case receiverJamming
    case osnmaReplay

    /// `policy.distrust`'s default: what an attack or a receiver guessing looks like, and what
    /// the receiver itself calls spoofing or a replay.
    package static let defaults: [DistrustedSignal] = [.jumped, .spoofingSuspected, .clockSkewed, .estimatedFix,
                                                      .receiverSpoofing, .osnmaReplay]
}
