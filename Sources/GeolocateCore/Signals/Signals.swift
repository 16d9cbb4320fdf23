/// What a record says to a risk engine beyond where the device is (SPEC §10.1): impossible
/// travel, a country change, a stale, inaccurate, replayed or spoofed fix.
///
/// Computed on the device, offline, for every record with a location; it never fails or
/// delays a record.
public struct Signals: Sendable, Equatable {
    /// The last report with a location made on this device before this one.
    public struct Previous: Sendable, Equatable {
        /// Its fix time, milliseconds since 1970.
        public var recordTimestamp: Int64
        /// Geodesic metres from it to this record's location; withheld below `GPS_LOCATION`.
        public var distance: Double?
        /// Its country code; withheld when the precision withholds country codes.
        public var countryCode: String?

        public init(recordTimestamp: Int64, distance: Double?, countryCode: String?) {
            self.recordTimestamp = recordTimestamp
            self.distance = distance
            self.countryCode = countryCode
        }
    }

    /// `nil` when there is no earlier report.
    public var previous: Previous?
    /// Metres per second from the previous report; `nil` without one, when no time passed, or withheld.
    public var impliedSpeed: Double?
    public var jumped = false
    public var countryChanged = false
    public var stale = false
    public var inaccurate = false
    public var replayed = false
    /// System time at arrival minus the fix's time, for a current fix from a live source.
    public var clockSkewMilliseconds: Int64?
    public var satellites: SatelliteSummary?
    public var spoofingSuspected = false
    /// One short English line per signal that is true, each starting with the signal's name.
    public var reasons: [String] = []

    public init() {}

    /// The signals without the figures that tell where the device is or was: what records
    /// carry below `GPS_LOCATION` precision. The booleans stay; each reason line keeps its
    /// signal's name and loses its figures.
    public func withoutFigures(keepingCountry: Bool) -> Signals {
        var signals = self
        signals.previous?.distance = nil
        if !keepingCountry { signals.previous?.countryCode = nil }
        signals.impliedSpeed = nil
        signals.reasons = reasons.map(Signals.plainReason)
        return signals
    }

    /// A reason line in words only, from its signal's name (the text before the colon).
    static func plainReason(_ line: String) -> String {
        let name = line.split(separator: ":", maxSplits: 1).first.map(String.init) ?? line
        return plainReasons[name].map { "\(name): \($0)" } ?? name
    }

    /// Each reason in words only, by signal name.
    static let plainReasons: [String: String] = [
        "jumped": "moved faster than signals.maxSpeed allows since the previous report",
        "countryChanged": "in another country than the previous report within signals.countryWindow",
        "stale": "the fix is older than signals.staleAfter",
        "inaccurate": "the fix is less accurate than signals.maxAccuracy, or its accuracy is unknown",
        "replayed": "the fix was replayed, or its time is off the system clock by more than signals.maxClockSkew",
        "spoofingSuspected": "the satellites' signal strengths look simulated",
        "wifiChanged": "the Wi-Fi access point changed while the fix stayed put",
    ]

    /// The true booleans as bits, for the spool.
    var flags: Int64 {
        var bits: Int64 = 0
        for (index, on) in [jumped, countryChanged, stale, inaccurate, replayed, spoofingSuspected].enumerated() where on {
            bits |= 1 << index
        }
        return bits
    }

    /// Sets the booleans from `flags`.
    mutating func setFlags(_ bits: Int64) {
        func bit(_ index: Int) -> Bool { bits & (1 << index) != 0 }
        (jumped, countryChanged, stale, inaccurate, replayed, spoofingSuspected) = (bit(0), bit(1), bit(2), bit(3), bit(4), bit(5))
    }
}
