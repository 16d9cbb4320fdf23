/// One decoded NMEA-0183 sentence of a type that contributes to a fix; any talker.
///
/// Only the fields geolocate uses are decoded. Unknown values are `nil`.
public enum NMEASentence: Sendable, Equatable {
    /// GGA: time, position, quality, satellites, HDOP, altitude (MSL) and geoid separation.
    case gga(time: Int?, latitude: Double?, longitude: Double?, quality: Int?, satellites: Int?,
             hdop: Double?, altitudeMSL: Double?, geoidSeparation: Double?)
    /// RMC: time, status (`true` = A, valid), position, speed (knots), course, date, FAA mode.
    case rmc(time: Int?, valid: Bool, latitude: Double?, longitude: Double?, speedKnots: Double?,
             course: Double?, date: CivilDate?, faaMode: UInt8?)
    /// GLL: position, time, status.
    case gll(time: Int?, valid: Bool, latitude: Double?, longitude: Double?, faaMode: UInt8?)
    /// GNS: like GGA, with per-constellation mode letters.
    case gns(time: Int?, latitude: Double?, longitude: Double?, hasFix: Bool, satellites: Int?,
             hdop: Double?, altitudeMSL: Double?, geoidSeparation: Double?, quality: FixQuality?)
    /// GSA: fix type (1 none, 2 = 2D, 3 = 3D), DOPs and the satellites used.
    case gsa(fixType: Int?, pdop: Double?, hdop: Double?, vdop: Double?, used: SatellitesUsed)
    /// GST: 1-sigma errors of latitude, longitude and altitude, in metres.
    case gst(time: Int?, sigmaLatitude: Double?, sigmaLongitude: Double?, sigmaAltitude: Double?)
    /// VTG: course over ground (true) and speed (knots).
    case vtg(course: Double?, speedKnots: Double?, faaMode: UInt8?)
    /// ZDA: time and full date.
    case zda(time: Int?, date: CivilDate?)
    /// GSV: one message of the satellites in view, with their C/N0.
    case gsv(SatellitesInView)

    /// The UTC time of day in milliseconds, for sentences that carry one.
    public var timeOfDay: Int? {
        switch self {
        case .gga(let time, _, _, _, _, _, _, _), .rmc(let time, _, _, _, _, _, _, _),
             .gll(let time, _, _, _, _), .gns(let time, _, _, _, _, _, _, _, _),
             .gst(let time, _, _, _), .zda(let time, _):
            return time
        case .gsa, .vtg, .gsv:
            return nil
        }
    }

    /// Whether the sentence type normally carries a UTC time (GGA, RMC, GLL, GNS, GST, ZDA).
    public var isTimed: Bool {
        switch self {
        case .gga, .rmc, .gll, .gns, .gst, .zda: return true
        case .gsa, .vtg, .gsv: return false
        }
    }

    /// Decodes a sentence body (the bytes between `$` and `*`); `nil` for types geolocate ignores.
    ///
    /// Any two-letter talker is accepted (GP, GN, GL, GA, GB, BD, GQ, QZ, …); proprietary
    /// sentences (`P…`) and types outside the list are ignored. Inlined into the reading loop,
    /// where the sentence is then taken apart without being built in memory.
    @inline(__always)
    public static func parse(_ body: UnsafeBufferPointer<UInt8>) -> NMEASentence? {
        guard body.count >= 5, body[0] != 0x50 else { return nil }
        let type = UInt32(body[2]) << 16 | UInt32(body[3]) << 8 | UInt32(body[4])
        if body.count > 5 && body[5] != 0x2C { return nil }
        var f = NMEAFieldCursor(body: body)
        switch type {
        case SentenceType.gga:
            let time = f.timeOfDay()
            let latitude = f.coordinate(positive: 0x4E, negative: 0x53)
            let longitude = f.coordinate(positive: 0x45, negative: 0x57)
            let quality = f.integer()
            let satellites = f.integer()
            let hdop = f.decimal()
            let altitude = f.decimal()
            f.skip(1)
            let separation = f.decimal()
            return .gga(time: time, latitude: latitude, longitude: longitude, quality: quality,
                        satellites: satellites, hdop: hdop, altitudeMSL: altitude,
                        geoidSeparation: separation)
        case SentenceType.rmc:
            let time = f.timeOfDay()
            let status = f.character()
            let latitude = f.coordinate(positive: 0x4E, negative: 0x53)
            let longitude = f.coordinate(positive: 0x45, negative: 0x57)
            let speed = f.decimal()
            let course = f.decimal()
            let date = f.date()
            f.skip(2)
            let mode = f.character()
            return .rmc(time: time, valid: status == 0x41, latitude: latitude, longitude: longitude,
                        speedKnots: speed, course: course, date: date, faaMode: mode)
        case SentenceType.gll:
            let latitude = f.coordinate(positive: 0x4E, negative: 0x53)
            let longitude = f.coordinate(positive: 0x45, negative: 0x57)
            let time = f.timeOfDay()
            let status = f.character()
            let mode = f.character()
            return .gll(time: time, valid: status == 0x41, latitude: latitude, longitude: longitude,
                        faaMode: mode)
        case SentenceType.gns:
            let time = f.timeOfDay()
            let latitude = f.coordinate(positive: 0x4E, negative: 0x53)
            let longitude = f.coordinate(positive: 0x45, negative: 0x57)
            let modes = f.next()
            var hasFix = false
            // The best kind a system measured, and the weightiest unmeasured one (E, M, S).
            var measured: FixQuality?, unmeasured: FixQuality?
            if let modes {
                for i in modes where body[i] != 0x4E {
                    hasFix = true
                    guard let kind = FixQuality(modeLetter: body[i]) else { continue }
                    if kind.isMeasured {
                        measured = FixQuality.weightier(measured, kind)
                    } else {
                        unmeasured = FixQuality.weightier(unmeasured, kind)
                    }
                }
            }
            let satellites = f.integer()
            let hdop = f.decimal()
            let altitude = f.decimal()
            let separation = f.decimal()
            // A simulator in any system taints the fix; dead reckoning or manual input only
            // when no system measured (one constellation's RTK makes the fix RTK).
            return .gns(time: time, latitude: latitude, longitude: longitude, hasFix: hasFix,
                        satellites: satellites, hdop: hdop, altitudeMSL: altitude, geoidSeparation: separation,
                        quality: unmeasured == .simulator ? .simulator : measured ?? unmeasured)
        case SentenceType.gsa:
            f.skip(1)
            let fixType = f.integer()
            var used = SatellitesUsed(system: GNSSSystem.of(talker: body[0], body[1]))
            for _ in 0..<12 {
                if let prn = f.integer(), prn > 0, prn <= Int(UInt16.max) { used.append(prn: UInt16(prn)) }
            }
            let pdop = f.decimal()
            let hdop = f.decimal()
            let vdop = f.decimal()
            // NMEA 4.11 names the system of a GN talker's list after the DOPs.
            if used.system == 0 { used.system = UInt8(clamping: min(f.integer() ?? 0, 6)) }
            return .gsa(fixType: fixType, pdop: pdop, hdop: hdop, vdop: vdop, used: used)
        case SentenceType.gst:
            let time = f.timeOfDay()
            f.skip(4)
            let sigmaLatitude = f.decimal()
            let sigmaLongitude = f.decimal()
            let sigmaAltitude = f.decimal()
            return .gst(time: time, sigmaLatitude: sigmaLatitude, sigmaLongitude: sigmaLongitude,
                        sigmaAltitude: sigmaAltitude)
        case SentenceType.vtg:
            let course = f.decimal()
            f.skip(3)
            let speed = f.decimal()
            f.skip(3)
            let mode = f.character()
            return .vtg(course: course, speedKnots: speed, faaMode: mode)
        case SentenceType.zda:
            let time = f.timeOfDay()
            let day = f.integer(), month = f.integer(), year = f.integer()
            var date: CivilDate?
            if let day, let month, let year {
                let candidate = CivilDate(year: year, month: month, day: day)
                date = candidate.isValid ? candidate : nil
            }
            return .zda(time: time, date: date)
        case SentenceType.gsv:
            var message = SatellitesInView(system: GNSSSystem.of(talker: body[0], body[1]), messageCount: f.integer() ?? 0,
                                           messageNumber: f.integer() ?? 0)
            f.skip(1)
            while message.count < 4, let satellite = f.satelliteInView() {
                guard let prn = satellite.prn, prn > 0, prn <= Int(UInt16.max) else { continue }
                message.append(prn: UInt16(prn), cn0: UInt8(clamping: min(satellite.cn0 ?? 0, 99)))
            }
            return .gsv(message)
        default:
            return nil
        }
    }
}

/// Three-letter sentence formatters packed into an integer (`"GGA"` → 0x474741), for a cheap switch.
enum SentenceType {
    static let gga: UInt32 = 0x47_47_41, rmc: UInt32 = 0x52_4D_43, gll: UInt32 = 0x47_4C_4C
    static let gns: UInt32 = 0x47_4E_53, gsa: UInt32 = 0x47_53_41, gst: UInt32 = 0x47_53_54
    static let vtg: UInt32 = 0x56_54_47, zda: UInt32 = 0x5A_44_41, gsv: UInt32 = 0x47_53_56
}
