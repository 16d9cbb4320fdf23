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

    /// Which satellites the fix rests on (those used, else those in view with a C/N0), when
    /// the receiver named them: a position that jumps while they stay the same was not moved
    /// by travel.
    public var tracked: SatelliteSet?

    public init(used: Int?, measured: Int, cn0Mean: Double?, cn0StdDev: Double?, tracked: SatelliteSet? = nil) {
        self.used = used
        self.measured = measured
        self.cn0Mean = cn0Mean
        self.cn0StdDev = cn0StdDev
        self.tracked = tracked
    }

    /// Whether the figures are ones a receiver can report (C/N0 from 0 to 99 dB-Hz, counts
    /// not negative): a state file is input like any other.
    public var isPlausible: Bool {
        (used ?? 0) >= 0 && measured >= 0
            && [cn0Mean, cn0StdDev].allSatisfy { $0.map { $0.isFinite && (0...99).contains($0) } ?? true }
    }

    /// The summary of `used` and the C/N0 values `cn0`; `nil` when both are unknown.
    public static func of(used: Int?, cn0: [Double]) -> SatelliteSummary? {
        var sums = CN0Sums()
        for value in cn0 { sums.add(value) }
        return of(used: used, sums: sums)
    }

    /// The summary of `used` and the C/N0 values summed in `sums`; `nil` when both are unknown.
    static func of(used: Int?, sums: CN0Sums) -> SatelliteSummary? {
        guard sums.count > 0 else { return used.map { SatelliteSummary(used: $0, measured: 0, cn0Mean: nil, cn0StdDev: nil) } }
        // C/N0 values are whole dB-Hz under 100 (gpsd's to a tenth): the sums hold them exactly
        // enough that this form loses nothing to a two-pass one.
        let mean = sums.sum / Double(sums.count)
        let variance = max(0, sums.sumOfSquares / Double(sums.count) - mean * mean)
        return SatelliteSummary(used: used, measured: sums.count, cn0Mean: mean, cn0StdDev: variance.squareRoot())
    }
}

/// A set of satellites (system and PRN) kept as its size and an order-free fingerprint, so that
/// two fixes can be asked whether they rest on the same satellites without keeping the lists.
public struct SatelliteSet: Sendable, Equatable, Codable {
    public private(set) var count = 0
    /// The wrapping sum of each member's mixed number: the same for the same members in any order.
    public private(set) var fingerprint: UInt64 = 0

    public init() {}

    /// Adds a satellite, numbered by its system (NMEA 4.11's system ID, 0 when unknown) and PRN.
    /// Each member is added once.
    public mutating func insert(system: UInt8, prn: UInt16) {
        count += 1
        // splitmix64's finaliser: distinct numbers give unrelated 64-bit values.
        var value = (UInt64(system) << 16 | UInt64(prn)) &+ 0x9E37_79B9_7F4A_7C15
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        fingerprint &+= value ^ (value >> 31)
    }
}

/// Running sums of C/N0 values, for their mean and population standard deviation without
/// keeping the values.
struct CN0Sums {
    var count = 0
    var sum = 0.0
    var sumOfSquares = 0.0

    mutating func add(_ value: Double) {
        count += 1
        sum += value
        sumOfSquares += value * value
    }
}

/// One GSV message: up to four satellites in view with their C/N0, part of a cycle of
/// `messageCount` messages.
///
/// PRNs and C/N0 values are packed into integers: a sentence is copied for every line read,
/// and a wide payload would slow every sentence type down.
public struct SatellitesInView: Sendable, Equatable {
    /// The satellite system the talker names (`GNSSSystem`), 0 for GN or an unknown talker.
    public var system: UInt8
    public var messageCount: UInt8
    public var messageNumber: UInt8
    /// Satellites listed in this message, 0 to 4.
    public private(set) var count: UInt8 = 0
    /// Four 16-bit PRNs, the first in the low bits.
    private var packedPRNs: UInt64 = 0
    /// Four 8-bit C/N0 values in dB-Hz (0 when the field was empty: not tracked).
    private var packedCN0: UInt32 = 0

    public init(system: UInt8, messageCount: Int, messageNumber: Int) {
        self.system = system
        self.messageCount = UInt8(clamping: messageCount)
        self.messageNumber = UInt8(clamping: messageNumber)
    }

    /// Adds a satellite, when there is room for it.
    public mutating func append(prn: UInt16, cn0: UInt8) {
        guard count < 4 else { return }
        packedPRNs |= UInt64(prn) << (16 * UInt64(count))
        packedCN0 |= UInt32(cn0) << (8 * UInt32(count))
        count += 1
    }

    public func prn(at index: Int) -> UInt16 { UInt16(truncatingIfNeeded: packedPRNs >> (16 * UInt64(index))) }
    public func cn0(at index: Int) -> UInt8 { UInt8(truncatingIfNeeded: packedCN0 >> (8 * UInt32(index))) }
}

/// The satellites one GSA lists as used in the solution (up to 12), packed four to a word.
public struct SatellitesUsed: Sendable, Equatable {
    /// The system of the talker, or of NMEA 4.11's system-ID field; 0 when neither says.
    public var system: UInt8
    public private(set) var count: UInt8 = 0
    private var low: UInt64 = 0, middle: UInt64 = 0, high: UInt64 = 0

    public init(system: UInt8) {
        self.system = system
    }

    /// Adds a PRN, when there is room for it.
    public mutating func append(prn: UInt16) {
        guard count < 12 else { return }
        let bits = UInt64(prn) << (16 * UInt64(count % 4))
        switch count / 4 {
        case 0: low |= bits
        case 1: middle |= bits
        default: high |= bits
        }
        count += 1
    }

    public func prn(at index: Int) -> UInt16 {
        let word = index < 4 ? low : index < 8 ? middle : high
        return UInt16(truncatingIfNeeded: word >> (16 * UInt64(index % 4)))
    }
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
}

/// The receiver's sky as GSV and GSA tell it, kept across epochs: GSV cycles often come
/// every few seconds only, and GSA may fall in a neighbouring epoch.
///
/// Satellites are numbered system × 512 + PRN, so that GPS 5 and Galileo 5 stay apart; the
/// satellites used are a bit set, and the C/N0 figures running sums: a summary per epoch
/// allocates nothing.
struct SkyView {
    private struct Satellite {
        var key: Int
        var cn0: UInt8
    }

    /// The last complete GSV cycle of each system.
    private var inView: [Satellite] = []
    /// The cycle being received, and its system.
    private var cycle: [Satellite] = []
    private var cycleSystem: UInt8 = 0
    private var nextMessage: UInt8 = 0
    /// Time of day (ms) when a GSV cycle last completed.
    private var inViewTime: Int?
    /// The satellites the GSAs of the epoch at `usedTime` listed (made by the first GSA),
    /// and how many.
    private var used: [UInt64] = []
    private var usedCount = 0
    private var usedTime: Int?

    /// A GSV cycle or GSA list older than this, in milliseconds, no longer describes a fix.
    static let maximumAge = 30_000
    /// PRNs of the NMEA 4.x numbering stay under 512; systems are 1 to 6.
    private static let keyCount = 7 * 512

    /// An empty sky, made without allocating: `NMEAEpochStream` makes one for every epoch.
    init() {}

    /// The number of a satellite of `system` (0: infer it from the PRN); `nil` beyond the table.
    @inline(__always)
    private static func key(system: UInt8, prn: UInt16) -> Int? {
        let system = system == 0 ? GNSSSystem.of(prn: prn) : system
        guard system < 7, prn < 512 else { return nil }
        return Int(system) * 512 + Int(prn)
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
        for index in 0..<Int(message.count) {
            let prn = message.prn(at: index)
            if prn != 0, let key = SkyView.key(system: message.system, prn: prn) {
                cycle.append(Satellite(key: key, cn0: message.cn0(at: index)))
            }
        }
        nextMessage &+= 1
        guard message.messageNumber >= message.messageCount else { return }
        nextMessage = 0
        // The cycle replaces what was in view of its system; a GN cycle lists every system.
        if message.system == 0 {
            inView.removeAll(keepingCapacity: true)
        } else {
            let system = Int(message.system)
            inView.removeAll { $0.key / 512 == system }
        }
        inView.append(contentsOf: cycle)
        inViewTime = time
    }

    /// Adds one GSA's list of satellites used, received during the epoch at `time`.
    mutating func add(_ list: SatellitesUsed, at time: Int?) {
        if used.isEmpty { used = [UInt64](repeating: 0, count: SkyView.keyCount / 64) }
        if time != usedTime {
            if usedCount > 0 { for index in used.indices { used[index] = 0 } }
            usedCount = 0
            usedTime = time
        }
        for index in 0..<Int(list.count) {
            let prn = list.prn(at: index)
            guard prn != 0, let key = SkyView.key(system: list.system, prn: prn) else { continue }
            let bit = UInt64(1) << UInt64(key % 64)
            if used[key / 64] & bit == 0 {
                used[key / 64] |= bit
                usedCount += 1
            }
        }
    }

    /// The satellites behind the fix of the epoch at time of day `time`; `ggaUsed` is GGA's
    /// count of satellites used, for receivers without GSA.
    func summary(at time: Int, ggaUsed: Int?) -> SatelliteSummary? {
        let usedKnown = usedCount > 0 && SkyView.isRecent(usedTime, at: time)
        var sums = CN0Sums()
        if !inView.isEmpty && SkyView.isRecent(inViewTime, at: time) {
            func add(usedOnly: Bool) {
                for satellite in inView where satellite.cn0 > 0 {
                    if usedOnly && used[satellite.key / 64] & (1 << UInt64(satellite.key % 64)) == 0 { continue }
                    sums.add(Double(satellite.cn0))
                }
            }
            if usedKnown { add(usedOnly: true) }
            if sums.count == 0 { add(usedOnly: false) }
        }
        var summary = SatelliteSummary.of(used: usedKnown ? usedCount : ggaUsed, sums: sums)
        summary?.tracked = tracked(usedKnown: usedKnown, at: time)
        return summary
    }

    /// The satellites used, else those in view with a C/N0; `nil` when neither is known.
    private func tracked(usedKnown: Bool, at time: Int) -> SatelliteSet? {
        var set = SatelliteSet()
        if usedKnown {
            for (word, bits) in used.enumerated() where bits != 0 {
                for bit in 0..<64 where bits & (1 << UInt64(bit)) != 0 {
                    let key = word * 64 + bit
                    set.insert(system: UInt8(key / 512), prn: UInt16(key % 512))
                }
            }
        } else if SkyView.isRecent(inViewTime, at: time) {
            for satellite in inView where satellite.cn0 > 0 {
                set.insert(system: UInt8(satellite.key / 512), prn: UInt16(satellite.key % 512))
            }
        }
        return set.count > 0 ? set : nil
    }

    /// Whether `then` is at most `maximumAge` before `now`, both times of day, across midnight.
    private static func isRecent(_ then: Int?, at now: Int) -> Bool {
        guard let then else { return false }
        let age = (now - then + 86_400_000) % 86_400_000
        return age <= maximumAge
    }
}
