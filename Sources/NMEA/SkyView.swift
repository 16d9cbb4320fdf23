/// What a receiver said about the satellites behind a fix: how many it used, and how strong
/// their signals were (C/N0, which NMEA calls SNR, in dB-Hz).
///
/// The spread of the signal strengths is what betrays a simulator or a spoofer: it transmits
/// every satellite at about the same power, while a real sky spreads them by elevation.
public struct SatelliteSummary: Sendable, Equatable, Codable {
    /// Satellites used in the solution, when the receiver said (GSA's list, else GGA's count;
    /// gpsd's `used` flags).
    public var used: Int?
    /// How many satellites the C/N0 figures are of: those used that have a C/N0, else, when
    /// the receiver did not say which it used, those in view that have one.
    public var measured: Int
    /// Mean C/N0 in dB-Hz; `nil` when no satellite had one.
    public var cn0Mean: Double?
    /// Population standard deviation of the C/N0, in dB-Hz; `nil` when no satellite had one.
    public var cn0StdDev: Double?

    public init(used: Int?, measured: Int, cn0Mean: Double?, cn0StdDev: Double?) {
        self.used = used
        self.measured = measured
        self.cn0Mean = cn0Mean
        self.cn0StdDev = cn0StdDev
    }

    /// Whether the figures are ones a receiver can report (C/N0 from 0 to 99 dB-Hz, counts
    /// not negative): a state file is input like any other.
    public var isPlausible: Bool {
        (used ?? 0) >= 0 && measured >= 0
            && [cn0Mean, cn0StdDev].allSatisfy { $0.map { $0.isFinite && (0...99).contains($0) } ?? true }
    }

    /// The summary of `used` and the C/N0 values `cn0`; `nil` when both are unknown.
    public static func of(used: Int?, cn0: [Double]) -> SatelliteSummary? {
        guard used != nil || !cn0.isEmpty else { return nil }
        guard !cn0.isEmpty else { return SatelliteSummary(used: used, measured: 0, cn0Mean: nil, cn0StdDev: nil) }
        let mean = cn0.reduce(0, +) / Double(cn0.count)
        let variance = cn0.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(cn0.count)
        return SatelliteSummary(used: used, measured: cn0.count, cn0Mean: mean, cn0StdDev: variance.squareRoot())
    }
}

/// One GSV message: up to four satellites in view with their C/N0, part of a cycle of
/// `messageCount` messages.
public struct SatellitesInView: Sendable, Equatable {
    /// The satellite system the talker names (`GNSSSystem`), 0 for GN or an unknown talker.
    public var system: UInt8
    public var messageCount: Int
    public var messageNumber: Int
    /// Satellites listed in this message, 0 to 4.
    public var count: Int
    public var prns: SIMD4<UInt16>
    /// C/N0 in dB-Hz; 0 when the field was empty (the satellite is not tracked).
    public var cn0: SIMD4<UInt8>

    public init(system: UInt8, messageCount: Int, messageNumber: Int, count: Int, prns: SIMD4<UInt16>, cn0: SIMD4<UInt8>) {
        self.system = system
        self.messageCount = messageCount
        self.messageNumber = messageNumber
        self.count = count
        self.prns = prns
        self.cn0 = cn0
    }
}

/// The satellites one GSA lists as used in the solution (up to 12).
public struct SatellitesUsed: Sendable, Equatable {
    /// The system of the talker, or of NMEA 4.11's system-ID field; 0 when neither says.
    public var system: UInt8
    public var count: Int
    public var prns: SIMD16<UInt16>

    public init(system: UInt8, count: Int, prns: SIMD16<UInt16>) {
        self.system = system
        self.count = count
        self.prns = prns
    }

    static let none = SatellitesUsed(system: 0, count: 0, prns: .zero)
}

/// Satellite systems, numbered as NMEA 4.11's system ID (1 GPS, 2 GLONASS, 3 Galileo,
/// 4 BeiDou, 5 QZSS, 6 NavIC), so that PRN 5 of GPS and PRN 5 of Galileo stay apart.
enum GNSSSystem {
    /// The system a two-letter talker names; 0 for GN (several) and unknown talkers.
    @inline(__always)
    static func of(talker first: UInt8, _ second: UInt8) -> UInt8 {
        switch (first, second) {
        case (0x47, 0x50): return 1  // GP
        case (0x47, 0x4C): return 2  // GL
        case (0x47, 0x41): return 3  // GA
        case (0x47, 0x42), (0x42, 0x44): return 4  // GB, BD
        case (0x47, 0x51), (0x51, 0x5A): return 5  // GQ, QZ
        case (0x47, 0x49): return 6  // GI
        default: return 0
        }
    }

    /// The system of `prn` in the NMEA 4.x numbering, for talkers that do not say: 1–64 GPS
    /// and SBAS, 65–96 GLONASS, 193–200 QZSS, 201–263 and 401–463 BeiDou, 301–336 Galileo.
    static func of(prn: UInt16) -> UInt8 {
        switch prn {
        case 65...96: return 2
        case 193...200: return 5
        case 201...263, 401...463: return 4
        case 301...336: return 3
        default: return 1
        }
    }

    /// One number for a satellite of `system` (0 = infer from the PRN).
    @inline(__always)
    static func key(system: UInt8, prn: UInt16) -> UInt32 {
        UInt32(system == 0 ? of(prn: prn) : system) << 16 | UInt32(prn)
    }
}

/// The receiver's sky as GSV and GSA tell it, kept across epochs: GSV cycles often come
/// every few seconds only, and GSA may fall in a neighbouring epoch.
struct SkyView {
    private struct Satellite {
        var key: UInt32
        var cn0: UInt8
    }

    /// The last complete GSV cycle of each system.
    private var inView: [Satellite] = []
    /// The cycle being received, and its system.
    private var cycle: [Satellite] = []
    private var cycleSystem: UInt8 = 0
    private var nextMessage = 0
    /// Time of day (ms) when a GSV cycle last completed.
    private var inViewTime: Int?
    /// The satellites the GSAs of the epoch at `usedTime` listed.
    private var used: [UInt32] = []
    private var usedTime: Int?

    /// A GSV cycle or GSA list older than this, in milliseconds, no longer describes a fix.
    static let maximumAge = 30_000

    init() {
        inView.reserveCapacity(64)
        cycle.reserveCapacity(32)
        used.reserveCapacity(32)
    }

    /// Adds one GSV message, received during the epoch at time of day `time`.
    mutating func add(_ message: SatellitesInView, at time: Int?) {
        if message.messageNumber == 1 {
            cycle.removeAll(keepingCapacity: true)
            cycleSystem = message.system
            nextMessage = 1
        }
        // A message out of turn (lost, or of another cycle) spoils the cycle.
        guard message.messageNumber == nextMessage, message.system == cycleSystem else {
            nextMessage = 0
            return
        }
        for index in 0..<min(message.count, 4) where message.prns[index] != 0 {
            cycle.append(Satellite(key: GNSSSystem.key(system: message.system, prn: message.prns[index]), cn0: message.cn0[index]))
        }
        nextMessage += 1
        guard message.messageNumber >= message.messageCount else { return }
        nextMessage = 0
        // The cycle replaces what was in view of its systems; a GN cycle lists every system.
        if message.system == 0 {
            inView.removeAll(keepingCapacity: true)
        } else {
            inView.removeAll { $0.key >> 16 == UInt32(message.system) }
        }
        inView.append(contentsOf: cycle)
        inViewTime = time
    }

    /// Adds one GSA's list of satellites used, received during the epoch at `time`.
    mutating func add(_ list: SatellitesUsed, at time: Int?) {
        if time != usedTime {
            used.removeAll(keepingCapacity: true)
            usedTime = time
        }
        for index in 0..<min(list.count, 16) where list.prns[index] != 0 {
            used.append(GNSSSystem.key(system: list.system, prn: list.prns[index]))
        }
    }

    /// The satellites behind the fix of the epoch at time of day `time`; `ggaUsed` is GGA's
    /// count of satellites used, for receivers without GSA.
    func summary(at time: Int, ggaUsed: Int?) -> SatelliteSummary? {
        let usedKnown = !used.isEmpty && SkyView.isRecent(usedTime, at: time)
        let viewKnown = !inView.isEmpty && SkyView.isRecent(inViewTime, at: time)
        var cn0: [Double] = []
        if viewKnown {
            if usedKnown {
                for satellite in inView where satellite.cn0 > 0 && used.contains(satellite.key) { cn0.append(Double(satellite.cn0)) }
            }
            if cn0.isEmpty {
                for satellite in inView where satellite.cn0 > 0 { cn0.append(Double(satellite.cn0)) }
            }
        }
        return SatelliteSummary.of(used: usedKnown ? used.count : ggaUsed, cn0: cn0)
    }

    /// Whether `then` is at most `maximumAge` before `now`, both times of day, across midnight.
    private static func isRecent(_ then: Int?, at now: Int) -> Bool {
        guard let then else { return false }
        let age = (now - then + 86_400_000) % 86_400_000
        return age <= maximumAge
    }
}
