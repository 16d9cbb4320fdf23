/// One receiver cycle: the sentences that shared a UTC time, and the fix they made, if any.
public struct Epoch: Sendable, Equatable {
    /// UTC time of day in milliseconds.
    public var timeOfDay: Int
    /// Milliseconds since 1970 when the date is known (from RMC/ZDA, or carried from an earlier epoch).
    public var timestamp: Int64?
    /// The fix, when the receiver reported a valid 2D or 3D position and the date is known.
    public var fix: NMEAFix?
    /// True when the epoch had a valid position but no date was known yet, so no fix was made.
    public var undated: Bool
}

/// Assembles sentences into per-epoch fixes the way gpsd does.
///
/// A sentence with a new UTC time closes the current epoch. Position comes from the last of
/// GGA/RMC/GLL/GNS in the epoch, date from RMC/ZDA (carried over midnight when only GGA
/// follows), altitude from GGA as height above the ellipsoid (MSL + geoid separation, from
/// `GeoidModel` when GGA leaves it empty), mode from GGA (altitude present → 3D) and else
/// from GSA, while GSA mode 1 means no fix, DOPs from GSA/GGA,
/// sigmas from GST, speed and course from RMC/VTG. GGA quality 0, RMC/GLL status V and FAA
/// mode N mean no fix; manual input and simulator output are fixes that say so (`FixQuality`),
/// as gpsd 3.22 reports them.
public struct EpochAssembler {
    private var current = Accumulator()
    private var lastDate: CivilDate?
    private var lastDateTimeOfDay = 0
    private var lastStatedMode: FixMode?
    private var sky = SkyView()
    public init() {}

    /// The UTC time of day (ms) of the epoch being assembled, if a sentence gave one.
    public var openEpochTime: Int? { current.time }

    /// Adds one sentence; when it starts a new epoch, puts the previous one in `completed` and
    /// returns true.
    ///
    /// An epoch is written only when one closes, about one sentence in eight: returning an
    /// `Epoch?` for every sentence copied it each time, a tenth of a replay's time.
    @inline(__always)
    public mutating func add(_ sentence: NMEASentence, completing completed: inout Epoch?) -> Bool {
        var closed = false
        if let time = sentence.timeOfDay {
            if let open = current.time, open != time {
                completed = close()
                closed = completed != nil
            }
            current.time = time
        } else if sentence.isTimed {
            // A GGA/RMC/… whose time field is empty cannot be placed in an epoch: it may
            // belong to the next one, so merging it would mix two positions.
            return false
        }
        switch sentence {
        case .gsv(let message):
            sky.add(message, at: current.time)
            return closed
        case .gsa(_, _, _, _, let used):
            sky.add(used, at: current.time)
        default:
            break
        }
        current.apply(sentence)
        return closed
    }

    /// Closes the epoch in progress at the end of the stream.
    public mutating func finish() -> Epoch? {
        current.time == nil ? nil : close()
    }

    private mutating func close() -> Epoch? {
        // Read in place and reset on the way out, not copied out first: the accumulator is
        // some 300 bytes, and replay is mostly such copies after parsing.
        defer { current = Accumulator() }
        guard let time = current.time else { return nil }

        var date = current.date
        if date == nil, let previous = lastDate {
            // Carry the last date forward, rolling it over when the time of day wraps at midnight.
            date = time + 43_200_000 < lastDateTimeOfDay ? previous.adding(days: 1) : previous
        }
        if let date {
            lastDate = date
            lastDateTimeOfDay = time
        }
        let timestamp = date.map { Int64($0.daysSinceEpoch) * 86_400_000 + Int64(time) }
        var result = Epoch(timeOfDay: time, timestamp: timestamp, fix: nil, undated: false)
        let carried = lastStatedMode
        if let stated = current.statedMode { lastStatedMode = stated }
        if current.gsaFixType == 1 || current.ggaSaidNoFix { lastStatedMode = nil }
        guard let mode = current.mode(carried: carried), let latitude = current.latitude, let longitude = current.longitude else {
            return result
        }
        guard let timestamp else {
            result.undated = true
            return result
        }
        var altitudeHAE: Double?
        if mode == .threeD, let msl = current.altitudeMSL {
            altitudeHAE = msl + (current.geoidSeparation ?? GeoidModel.separation(latitude: latitude, longitude: longitude))
        }
        // Error figures out of range (negative, not finite) are unknown, as empty fields are.
        var horizontal: Double?
        if let sLat = FixLimits.errorFigure(current.sigmaLatitude), let sLon = FixLimits.errorFigure(current.sigmaLongitude) {
            horizontal = Accuracy.horizontal(sigmaLatitude: sLat, sigmaLongitude: sLon)
        } else if let hdop = FixLimits.errorFigure(current.hdop) {
            horizontal = Accuracy.horizontal(hdop: hdop)
        }
        var vertical: Double?
        if mode == .threeD {
            vertical = FixLimits.errorFigure(current.sigmaAltitude) ?? FixLimits.errorFigure(current.vdop).map(Accuracy.vertical(vdop:))
        }
        result.fix = NMEAFix.checked(
            timestamp: timestamp, latitude: latitude, longitude: longitude, mode: mode,
            altitudeHAE: altitudeHAE, altitudeMSL: mode == .threeD ? current.altitudeMSL : nil,
            speed: current.speedKnots.map { $0 * Accuracy.metresPerSecondPerKnot },
            course: current.course, horizontalAccuracy: horizontal, verticalAccuracy: vertical)
        result.fix?.satellites = sky.summary(at: time, ggaUsed: current.ggaSatellites)
        result.fix?.quality = current.unmeasured ?? current.ggaQuality ?? current.letterQuality ?? .gps
        return result
    }
}

/// What the sentences of one epoch said so far.
private struct Accumulator {
    var time: Int?
    var date: CivilDate?
    var latitude: Double?
    var longitude: Double?
    /// The fix state the last position sentence reported: nil = none seen.
    var positionValid: Bool?
    var ggaMode: FixMode?
    var ggaSaidNoFix = false
    /// The last GGA had a fix quality but fewer than 3 satellites used.
    var ggaFewSatellites = false
    /// The satellites the last GGA said were used.
    var ggaSatellites: Int?
    var gsaFixType: Int?
    var altitudeMSL: Double?
    var geoidSeparation: Double?
    var hdop: Double?
    var vdop: Double?
    var sigmaLatitude: Double?
    var sigmaLongitude: Double?
    var sigmaAltitude: Double?
    var speedKnots: Double?
    var course: Double?
    /// The weightiest word of the epoch that the receiver did not measure the position: GGA
    /// quality 6, 7 or 8, mode letter E, M or S (`FixQuality.weightier`). It outweighs the
    /// measured kinds, which a receiver may state in the same epoch.
    var unmeasured: FixQuality?
    /// The kind of fix GGA's quality said, which is the most detailed word (RTK, DGPS).
    var ggaQuality: FixQuality?
    /// The kind the last mode letter (RMC, GLL, GNS) said.
    var letterQuality: FixQuality?

    /// The mode GGA or GSA stated in this epoch, if either did.
    ///
    /// gpsd 3.22 lets a GGA with altitude make a 3D fix even when GSA says 2D.
    var statedMode: FixMode? {
        if let ggaMode { return ggaMode }
        switch gsaFixType {
        case 2: return .twoD
        case 3: return .threeD
        default: return nil
        }
    }

    /// The fix mode the epoch supports, or nil for no fix. Epochs whose GGA and GSA fell in
    /// a neighbouring epoch keep the mode last stated, as gpsd's cumulative state does.
    func mode(carried: FixMode?) -> FixMode? {
        guard positionValid == true, !ggaSaidNoFix, gsaFixType != 1 else { return nil }
        if ggaFewSatellites && gsaFixType == nil { return nil }
        return statedMode ?? carried ?? .twoD
    }

    /// Keeps what a mode letter (RMC, GLL, GNS) said of the fix: the last measured kind, or
    /// an unmeasured one (E, M, S), which outweighs every measured word of the epoch.
    private mutating func noteLetter(_ kind: FixQuality?) {
        guard let kind else { return }
        if kind.isMeasured { letterQuality = kind } else { unmeasured = FixQuality.weightier(unmeasured, kind) }
    }

    @inline(__always)
    mutating func apply(_ sentence: NMEASentence) {
        switch sentence {
        case let .gga(_, latitude, longitude, quality, satellites, hdop, altitude, separation):
            guard let quality else { return }
            // gpsd 3.22 (processGGA) reports quality 7 (manual) and 8 (simulator) as fixes,
            // with TPV status 7 and 8.
            if quality == 0 {
                ggaSaidNoFix = true
                positionValid = false
                return
            }
            ggaSaidNoFix = false
            let kind = FixQuality(ggaQuality: quality)
            if let kind, !kind.isMeasured { unmeasured = FixQuality.weightier(unmeasured, kind) } else { ggaQuality = kind }
            // gpsd 3.22 (processGGA): fewer than 3 satellites used, an empty field counting as
            // 0, is no fix whatever the quality says, unless a GSA of the epoch states a mode.
            ggaFewSatellites = (satellites ?? 0) < 3
            ggaSatellites = satellites
            setPosition(latitude, longitude, valid: true)
            if let hdop { self.hdop = hdop }
            altitudeMSL = altitude
            if let separation { geoidSeparation = separation }
            ggaMode = altitude == nil ? .twoD : .threeD
        case let .gns(_, latitude, longitude, hasFix, _, hdop, altitude, separation, quality):
            guard hasFix else { return }
            noteLetter(quality)
            setPosition(latitude, longitude, valid: true)
            if let hdop { self.hdop = hdop }
            if let altitude { altitudeMSL = altitude }
            if let separation { geoidSeparation = separation }
        case let .rmc(_, valid, latitude, longitude, speed, course, date, faaMode):
            if let date { self.date = date }
            let ok = valid && faaMode != 0x4E
            // gpsd 3.22 (processRMC): status V sets no fix, even after a GGA of the same epoch,
            // whatever the mode letter says.
            if !valid { positionValid = false }
            if ok { noteLetter(faaMode.flatMap(FixQuality.init(modeLetter:))) }
            setPosition(latitude, longitude, valid: ok)
            if ok {
                if let speed { speedKnots = speed }
                if let course { self.course = course }
            }
        case let .gll(_, valid, latitude, longitude, faaMode):
            let ok = valid && faaMode != 0x4E
            if ok { noteLetter(faaMode.flatMap(FixQuality.init(modeLetter:))) }
            setPosition(latitude, longitude, valid: ok)
        case let .gsa(fixType, _, hdop, vdop, _):
            guard let fixType, (1...3).contains(fixType) else { return }
            gsaFixType = fixType
            if let hdop { self.hdop = hdop }
            if let vdop { self.vdop = vdop }
        case let .gst(_, sigmaLatitude, sigmaLongitude, sigmaAltitude):
            self.sigmaLatitude = sigmaLatitude
            self.sigmaLongitude = sigmaLongitude
            self.sigmaAltitude = sigmaAltitude
        case let .vtg(course, speed, faaMode):
            guard faaMode != 0x4E else { return }
            if let speed { speedKnots = speed }
            if let course { self.course = course }
        case let .zda(_, date):
            if let date { self.date = date }
        case .gsv:
            break
        }
    }

    private mutating func setPosition(_ latitude: Double?, _ longitude: Double?, valid: Bool) {
        guard valid else {
            if positionValid == nil { positionValid = false }
            return
        }
        guard let latitude, let longitude, abs(latitude) <= 90, abs(longitude) <= 180 else { return }
        self.latitude = latitude
        self.longitude = longitude
        positionValid = true
    }
}
