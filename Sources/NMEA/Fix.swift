/// One position solution from a receiver, with everything that is known about it.
///
/// Fields that the receiver did not report are `nil`; a `Fix` always has a position,
/// a 2D/3D mode and the UTC time it was taken.
public struct Fix: Sendable, Equatable, Codable {
    /// Whether the solution includes altitude.
    public enum Mode: String, Sendable, Codable {
        case twoD = "2D"
        case threeD = "3D"
    }

    /// Where a fix came from, as the record's `provider` names it.
    public enum Provider: String, Sendable, Codable {
        case gpsd = "GPSD"
        case nmeaReplay = "NMEA_REPLAY"
    }

    /// Receiver UTC time of the fix, in milliseconds since 1970-01-01.
    public var timestamp: Int64
    /// Degrees north, WGS-84.
    public var latitude: Double
    /// Degrees east, WGS-84.
    public var longitude: Double
    public var mode: Mode
    /// Metres above the WGS-84 ellipsoid.
    public var altitudeHAE: Double?
    /// Metres above mean sea level, as the receiver reported it.
    public var altitudeMSL: Double?
    /// Metres per second over ground.
    public var speed: Double?
    /// Degrees clockwise from true north.
    public var course: Double?
    /// Radius in metres of 68 % confidence; see `Accuracy`.
    public var horizontalAccuracy: Double?
    /// Metres, 68 % (one sigma) in altitude.
    public var verticalAccuracy: Double?
    public var provider: Provider
    /// The satellites behind the fix, when the receiver or gpsd told (GSV/GSA, SKY).
    public var satellites: SatelliteSummary?
    /// System time (ms since 1970) when a live source delivered the fix; `nil` on replays.
    /// A live fix's age is measured from here, never from a receiver time that disagrees.
    public var receivedAt: Int64?
    /// The boot the fix arrived in (`/proc/sys/kernel/random/boot_id`) and the monotonic
    /// time since that boot then, in ms: within one boot the age survives a clock step.
    public var receivedBoot: String?
    public var receivedUptime: Int64?
    /// True for a fix a source held (gpsd's answer to `?POLL;`) whose arrival geolocate did
    /// not see and may not take from its date (SPEC §3): its age is unknown, so it is never
    /// current and meets no age bound; `receivedAt` is then only when it was handed over.
    public var arrivalUnknown: Bool?
    /// The system clock when the fix came from the source minus the fix's time, for a live
    /// fix: how far the receiver's clock and the system's disagree.
    public var clockSkewMilliseconds: Int64?

    /// What the receiver says of the fix's kind (SPEC §15); `nil` when it said nothing.
    public var quality: Quality?

    /// Whether the fix comes from a replayed log (a file, pipe or FIFO, on the log's clock):
    /// a fix from gpsd or from a receiver on a terminal is live, dated by its arrival.
    public var isReplayed: Bool { provider == .nmeaReplay && receivedAt == nil }
    /// The receiver's jamming indicator, 0 (none) to 255 (strong), as gpsd reports it (`jam`,
    /// from gpsd 3.26 on); `nil` when it did not.
    public var jamming: Int?
    /// The antenna's state as gpsd reports it (`ant`, from gpsd 3.26 on); `nil` when unknown.
    public var antenna: Antenna?
    /// Whether the receiver powers its antenna, as gpsd reports it (`antPwr`, from gpsd 3.27
    /// on); `nil` when unknown.
    public var antennaPower: AntennaPower?

    /// Whether a receiver feeds its antenna: off is what a passive antenna needs, and what an
    /// active one disconnected from its amplifier looks like.
    public enum AntennaPower: String, Sendable, Codable, CaseIterable {
        case off
        case on
    }

    /// An antenna's state, as a receiver's antenna supervisor reports it.
    public enum Antenna: String, Sendable, Codable, CaseIterable {
        case ok
        /// Disconnected, or a broken cable.
        case open
        /// A short circuit.
        case short
    }

    /// The receiver's own word on a fix: GGA's quality, the RMC/GLL/GNS mode letter, or
    /// gpsd's TPV `status`.
    ///
    /// gpsd 3.22 reports manual input and simulator output as fixes (GGA 7 and 8 give TPVs with
    /// `status` 7 and 8), and so does geolocate; they are `manual` and `simulator` here, never
    /// measured positions, and a policy distrusts them (`estimatedFix`).
    public enum Quality: String, Sendable, Codable, CaseIterable {
        /// A GNSS fix (GGA 1 or 3, mode A or P, gpsd status 1 or 9).
        case gps
        /// Differential corrections (GGA 2, mode D, status 2).
        case dgps
        /// RTK with fixed integers (GGA 4, mode R, status 3).
        case rtkFixed = "rtk-fixed"
        /// RTK with float ambiguities (GGA 5, mode F, status 4).
        case rtkFloat = "rtk-float"
        /// Dead reckoning (GGA 6, mode E, status 5 or 6).
        case estimated
        /// A position typed in or surveyed (GGA 7, mode M, status 7).
        case manual
        /// Simulator output (GGA 8, mode S, status 8): on a live source, a simulator's signal
        /// reaching a real device.
        case simulator

        /// GGA's quality indicator.
        public init?(ggaQuality: Int) {
            switch ggaQuality {
            case 1, 3: self = .gps
            case 2: self = .dgps
            case 4: self = .rtkFixed
            case 5: self = .rtkFloat
            case 6: self = .estimated
            case 7: self = .manual
            case 8: self = .simulator
            default: return nil
            }
        }

        /// An NMEA 2.3+ mode letter (RMC, GLL, GNS, VTG).
        public init?(modeLetter: UInt8) {
            switch modeLetter {
            case UInt8(ascii: "A"), UInt8(ascii: "P"): self = .gps
            case UInt8(ascii: "D"): self = .dgps
            case UInt8(ascii: "R"): self = .rtkFixed
            case UInt8(ascii: "F"): self = .rtkFloat
            case UInt8(ascii: "E"): self = .estimated
            case UInt8(ascii: "M"): self = .manual
            case UInt8(ascii: "S"): self = .simulator
            default: return nil
            }
        }

        /// Whether the receiver measured the position: not estimated, typed in or simulated.
        public var isMeasured: Bool { rank > 0 }

        /// Of two words on one fix, the one that says more: any unmeasured kind outweighs a
        /// measured one (simulator, then manual, then estimated), else the more precise kind.
        public static func weightier(_ a: Quality?, _ b: Quality?) -> Quality? {
            guard let a else { return b }
            guard let b else { return a }
            if a.isMeasured != b.isMeasured { return a.isMeasured ? b : a }
            return (a.isMeasured ? a.rank > b.rank : a.rank < b.rank) ? a : b
        }

        /// How much the kind adds to a plain fix; unmeasured kinds are 0 and below.
        var rank: Int {
            switch self {
            case .simulator: -2
            case .manual: -1
            case .estimated: 0
            case .gps: 1
            case .dgps: 2
            case .rtkFloat: 3
            case .rtkFixed: 4
            }
        }
    }

    public init(
        timestamp: Int64, latitude: Double, longitude: Double, mode: Mode,
        altitudeHAE: Double? = nil, altitudeMSL: Double? = nil, speed: Double? = nil,
        course: Double? = nil, horizontalAccuracy: Double? = nil, verticalAccuracy: Double? = nil,
        provider: Provider
    ) {
        self.timestamp = timestamp
        self.latitude = latitude
        self.longitude = longitude
        self.mode = mode
        self.altitudeHAE = altitudeHAE
        self.altitudeMSL = altitudeMSL
        self.speed = speed
        self.course = course
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
        self.provider = provider
    }

    /// The later of two fixes, by arrival for live fixes, else by time; on a tie the second,
    /// which gpsd may have completed since the first (it can report an epoch in parts).
    /// Either may be missing.
    public static func fresher(_ a: Fix?, _ b: Fix?) -> Fix? {
        guard let a else { return b }
        guard let b else { return a }
        return a.arrivalOrTime > b.arrivalOrTime ? a : b
    }

    /// Whether `other` is this fix again (the same time and place), as gpsd answers `?POLL;`
    /// with the fix it holds until a new one comes.
    public func isSameFix(as other: Fix) -> Bool {
        timestamp == other.timestamp && latitude == other.latitude && longitude == other.longitude
    }

    /// When the fix arrived (live), else its time (replay): what "later" means between fixes.
    public var arrivalOrTime: Int64 { receivedAt ?? timestamp }
}

/// The range checks every fix passes at the edge, from gpsd and from NMEA alike (SPEC §8: a
/// live fix with coordinates, accuracy, speed or course out of range is not a fix).
///
/// Both `EpochAssembler` and `GPSDSource` build fixes only through `Fix.checked`, and pass raw
/// error figures (DOPs, GST sigmas, gpsd's `eph`/`epx`/`epy`/`epv`) through `errorFigure` before
/// converting them. A position out of range is no fix at all; any other value out of range
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

extension Fix {
    /// A fix from receiver values, range-checked by `FixLimits`: `nil` when the position is out
    /// of range or not finite; altitude, speed, course and accuracies out of range become `nil`.
    public static func checked(
        timestamp: Int64, latitude: Double, longitude: Double, mode: Mode,
        altitudeHAE: Double? = nil, altitudeMSL: Double? = nil, speed: Double? = nil,
        course: Double? = nil, horizontalAccuracy: Double? = nil, verticalAccuracy: Double? = nil,
        provider: Provider
    ) -> Fix? {
        guard FixLimits.isValidPosition(latitude: latitude, longitude: longitude) else { return nil }
        return Fix(timestamp: timestamp, latitude: latitude, longitude: longitude, mode: mode,
                   altitudeHAE: FixLimits.altitude(altitudeHAE), altitudeMSL: FixLimits.altitude(altitudeMSL),
                   speed: FixLimits.speed(speed), course: FixLimits.course(course),
                   horizontalAccuracy: FixLimits.errorFigure(horizontalAccuracy),
                   verticalAccuracy: FixLimits.errorFigure(verticalAccuracy), provider: provider)
    }

    /// `fix` range-checked again, for fixes read back from state files.
    public static func checked(_ fix: Fix) -> Fix? {
        var checked = checked(timestamp: fix.timestamp, latitude: fix.latitude, longitude: fix.longitude, mode: fix.mode,
                              altitudeHAE: fix.altitudeHAE, altitudeMSL: fix.altitudeMSL, speed: fix.speed, course: fix.course,
                              horizontalAccuracy: fix.horizontalAccuracy, verticalAccuracy: fix.verticalAccuracy,
                              provider: fix.provider)
        checked?.satellites = fix.satellites.flatMap { $0.isPlausible ? $0 : nil }
        checked?.receivedAt = fix.receivedAt
        checked?.receivedBoot = fix.receivedBoot.flatMap { $0.utf8.count <= 64 ? $0 : nil }
        checked?.receivedUptime = fix.receivedUptime.flatMap { $0 >= 0 ? $0 : nil }
        checked?.clockSkewMilliseconds = fix.clockSkewMilliseconds
        checked?.quality = fix.quality
        checked?.jamming = fix.jamming.flatMap { (0...255).contains($0) ? $0 : nil }
        checked?.antenna = fix.antenna
        checked?.antennaPower = fix.antennaPower
        return checked
    }
}

/// Conversions from receiver error figures to the 68 % radius records report.
///
/// A circular normal error with per-axis sigma σ has its p-quantile radius at
/// σ·√(−2 ln(1−p)): 1.5096 σ at 68 %, 2.4477 σ at 95 %, so r68 = r95 × 0.617.
public enum Accuracy {
    /// r68 / σ for a circular normal error.
    public static let radius68PerSigma = 1.5096
    /// r68 / r95, for gpsd's 95 % `eph`, `epx` and `epy`.
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
