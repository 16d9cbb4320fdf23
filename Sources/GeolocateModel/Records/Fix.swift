import NMEA

/// One position solution from a source (gpsd, or an NMEA receiver or log), with everything
/// that is known about it: the receiver's `NMEAFix`, or gpsd's TPV, and its arrival.
///
/// Fields that the receiver did not report are `nil`; a `Fix` always has a position,
/// a 2D/3D mode and the UTC time it was taken.
package struct Fix: Sendable, Equatable, Codable {
    /// Whether the solution includes altitude.
    package typealias Mode = FixMode
    /// What the receiver says of the fix's kind (`FixQuality`).
    package typealias Quality = FixQuality

    /// Where a fix came from, as the record's `provider` names it.
    package enum Provider: String, Sendable, Codable {
        case gpsd = "GPSD"
        case nmeaReplay = "NMEA_REPLAY"
    }

    /// Receiver UTC time of the fix, in milliseconds since 1970-01-01.
    package var timestamp: Int64
    /// Degrees north, WGS-84.
    package var latitude: Double
    /// Degrees east, WGS-84.
    package var longitude: Double
    package var mode: Mode
    /// Metres above the WGS-84 ellipsoid.
    package var altitudeHAE: Double?
    /// Metres above mean sea level, as the receiver reported it.
    package var altitudeMSL: Double?
    /// Metres per second over ground.
    package var speed: Double?
    /// Degrees clockwise from true north.
    package var course: Double?
    /// Radius in metres of 68 % confidence; see `Accuracy`.
    package var horizontalAccuracy: Double?
    /// Metres, 68 % (one sigma) in altitude.
    package var verticalAccuracy: Double?
    package var provider: Provider
    /// The satellites behind the fix, when the receiver or gpsd told (GSV/GSA, SKY).
    package var satellites: SatelliteSummary?
    /// System time (ms since 1970) when a live source delivered the fix; `nil` on replays.
    /// A live fix's age is measured from here, never from a receiver time that disagrees.
    package var receivedAt: Int64?
    /// The boot the fix arrived in (`/proc/sys/kernel/random/boot_id`) and the monotonic
    /// time since that boot then, in ms: within one boot the age survives a clock step.
    package var receivedBoot: String?
    package var receivedUptime: Int64?
    /// True for a fix a source held (gpsd's answer to `?POLL;`) whose arrival geolocate did
    /// not see and may not take from its date (SPEC §3): its age is unknown, so it is never
    /// current and meets no age bound; `receivedAt` is then only when it was handed over.
    package var arrivalUnknown: Bool?
    /// The system clock when the fix came from the source minus the fix's time, for a live
    /// fix: how far the receiver's clock and the system's disagree.
    package var clockSkewMilliseconds: Int64?

    /// What the receiver says of the fix's kind (SPEC §15); `nil` when it said nothing.
    package var quality: Quality?

    /// Whether the fix comes from a replayed log (a file, pipe or FIFO, on the log's clock):
    /// a fix from gpsd or from a receiver on a terminal is live, dated by its arrival.
    package var isReplayed: Bool { provider == .nmeaReplay && receivedAt == nil }
    /// The receiver's jamming indicator, 0 (none) to 255 (strong), as gpsd reports it (`jam`,
    /// from gpsd 3.26 on); `nil` when it did not.
    package var jamming: Int?
    /// The antenna's state as gpsd reports it (`ant`, from gpsd 3.26 on); `nil` when unknown.
    package var antenna: Antenna?
    /// Whether the receiver powers its antenna, as gpsd reports it (`antPwr`, from gpsd 3.27
    /// on); `nil` when unknown.
    package var antennaPower: AntennaPower?
    /// What a u-blox receiver said of this fix through UBX: OSNMA, its own spoofing and
    /// jamming detection (SPEC §15); `nil` when it said nothing.
    package var receiverVerdict: ReceiverVerdict?

    /// Whether a receiver feeds its antenna: off is what a passive antenna needs, and what an
    /// active one disconnected from its amplifier looks like.
    package enum AntennaPower: String, Sendable, Codable, CaseIterable {
        case off
        case on
    }

    /// An antenna's state, as a receiver's antenna supervisor reports it.
    package enum Antenna: String, Sendable, Codable, CaseIterable {
        case ok
        /// Disconnected, or a broken cable.
        case open
        /// A short circuit.
        case short
    }

    package init(
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
    package static func fresher(_ a: Fix?, _ b: Fix?) -> Fix? {
        guard let a else { return b }
        guard let b else { return a }
        return a.arrivalOrTime > b.arrivalOrTime ? a : b
    }

    /// Whether `other` is this fix again (the same time and place), as gpsd answers `?POLL;`
    /// with the fix it holds until a new one comes.
    package func isSameFix(as other: Fix) -> Bool {
        timestamp == other.timestamp && latitude == other.latitude && longitude == other.longitude
    }

    /// When the fix arrived (live), else its time (replay): what "later" means between fixes.
    package var arrivalOrTime: Int64 { receivedAt ?? timestamp }

    /// `fix` from `provider`, not yet dated by its arrival.
    package init(_ fix: NMEAFix, provider: Provider) {
        self.init(timestamp: fix.timestamp, latitude: fix.latitude, longitude: fix.longitude, mode: fix.mode,
                  altitudeHAE: fix.altitudeHAE, altitudeMSL: fix.altitudeMSL, speed: fix.speed, course: fix.course,
                  horizontalAccuracy: fix.horizontalAccuracy, verticalAccuracy: fix.verticalAccuracy, provider: provider)
        satellites = fix.satellites
        quality = fix.quality
        receiverVerdict = fix.receiverVerdict
    }
}

extension Fix {
    /// A fix from receiver values, range-checked by `FixLimits`: `nil` when the position is out
    /// of range or not finite; altitude, speed, course and accuracies out of range become `nil`.
    package static func checked(
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
    package static func checked(_ fix: Fix) -> Fix? {
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
        checked?.receiverVerdict = fix.receiverVerdict
        return checked
    }
}
