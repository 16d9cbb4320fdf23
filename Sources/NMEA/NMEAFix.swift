/// One position solution as a receiver's NMEA sentences report it: an epoch's fix, before
/// any source dates its arrival or says where it came from (that is the model's `Fix`).
///
/// Fields that the sentences did not give are `nil`; an `NMEAFix` always has a position, a
/// 2D/3D mode and the UTC time it was taken.
public struct NMEAFix: Sendable, Equatable {
    /// Receiver UTC time of the fix, in milliseconds since 1970-01-01.
    public var timestamp: Int64
    /// Degrees north, WGS-84.
    public var latitude: Double
    /// Degrees east, WGS-84.
    public var longitude: Double
    public var mode: FixMode
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
    /// The satellites behind the fix (GSV/GSA).
    public var satellites: SatelliteSummary?
    /// What the receiver says of the fix's kind; `nil` when it said nothing.
    public var quality: FixQuality?
    /// What a u-blox receiver said of the fix through UBX (OSNMA, its spoofing and jamming
    /// detection); `nil` when it said nothing.
    public var receiverVerdict: ReceiverVerdict?

    /// A fix from receiver values, range-checked by `FixLimits`: `nil` when the position is out
    /// of range or not finite; altitude, speed, course and accuracies out of range become `nil`.
    public static func checked(
        timestamp: Int64, latitude: Double, longitude: Double, mode: FixMode,
        altitudeHAE: Double? = nil, altitudeMSL: Double? = nil, speed: Double? = nil,
        course: Double? = nil, horizontalAccuracy: Double? = nil, verticalAccuracy: Double? = nil
    ) -> NMEAFix? {
        guard FixLimits.isValidPosition(latitude: latitude, longitude: longitude) else { return nil }
        return NMEAFix(timestamp: timestamp, latitude: latitude, longitude: longitude, mode: mode,
                       altitudeHAE: FixLimits.altitude(altitudeHAE), altitudeMSL: FixLimits.altitude(altitudeMSL),
                       speed: FixLimits.speed(speed), course: FixLimits.course(course),
                       horizontalAccuracy: FixLimits.errorFigure(horizontalAccuracy),
                       verticalAccuracy: FixLimits.errorFigure(verticalAccuracy))
    }
}

/// Whether a position solution includes altitude.
public enum FixMode: String, Sendable, Codable {
    case twoD = "2D"
    case threeD = "3D"
}

/// The receiver's own word on a fix: GGA's quality or the RMC/GLL/GNS mode letter.
///
/// Manual input and simulator output are fixes that say so (GGA 7 and 8, as gpsd 3.22
/// reports them): `manual` and `simulator` here, never measured positions.
public enum FixQuality: String, Sendable, Codable, CaseIterable {
    /// A GNSS fix (GGA 1 or 3, mode A or P).
    case gps
    /// Differential corrections (GGA 2, mode D).
    case dgps
    /// RTK with fixed integers (GGA 4, mode R).
    case rtkFixed = "rtk-fixed"
    /// RTK with float ambiguities (GGA 5, mode F).
    case rtkFloat = "rtk-float"
    /// Dead reckoning (GGA 6, mode E).
    case estimated
    /// A position typed in or surveyed (GGA 7, mode M).
    case manual
    /// Simulator output (GGA 8, mode S): on a live source, a simulator's signal reaching a
    /// real device.
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
    public static func weightier(_ a: FixQuality?, _ b: FixQuality?) -> FixQuality? {
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
