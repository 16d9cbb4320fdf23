#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How fast a replay plays: as fast as possible, or paced against the wall clock.
public enum ReplaySpeed: Sendable, Equatable, CustomStringConvertible {
    /// No pacing; virtual time still advances by the NMEA timestamps.
    case asap
    /// `factor` seconds of log per wall-clock second (`realtime` is 1).
    case factor(Double)

    /// The slowest and fastest paced factors accepted: beyond them a replay would take
    /// centuries, or pacing would be indistinguishable from `asap`.
    public static let factorRange = 0.001...1_000_000.0

    /// Parses `asap`, `realtime` or `Nx` (such as `10x` or `0.5x`).
    public init(parsing text: String) throws {
        switch text.lowercased() {
        case "asap": self = .asap
        case "realtime": self = .factor(1)
        default:
            guard text.lowercased().hasSuffix("x"), NumberText.isDecimal(text.dropLast()), let value = Double(text.dropLast()),
                  ReplaySpeed.factorRange.contains(value)
            else {
                throw GeolocateError.usage(
                    "invalid replay speed '\(text)' (use asap, realtime or a factor from 0.001x to 1000000x, such as 10x)")
            }
            self = .factor(value)
        }
    }

    public var description: String {
        switch self {
        case .asap: return "asap"
        case .factor(let value): return value == 1 ? "realtime" : "\(value)x"
        }
    }
}

/// Replays an NMEA-0183 log (or stdin) as a location source running on virtual time.
///
/// Virtual time advances by the differences between the receiver's UTC times of successive
/// epochs: it crosses midnight, and a step backwards (out-of-order receivers, logs joined
/// together) does not rewind it.
public final class NMEAReplaySource: LocationSource {
    public let provider = Fix.Provider.nmeaReplay
    public let name: String
    private let stream: NMEAEpochStream
    private let fd: Int32
    private let speed: ReplaySpeed
    private let idleMilliseconds: Int32?
    private let pacingClock: MonotonicClock
    /// Virtual milliseconds elapsed since the first epoch.
    private var elapsed = 0
    private var lastTimeOfDay: Int?
    private var lastTimestamp: Int64?
    private var wallStart: Double?
    /// An epoch read past the end of the last wait, first in line for the next one.
    private var pendingEpoch: Epoch?

    /// Opens `path` (`-` for standard input).
    ///
    /// - Parameter idleMilliseconds: with a value, a wait returns after at most this much wall
    ///   time of silent input or pacing (see `waitForFix`); `nil` waits as long as needed.
    /// - Throws: `GeolocateError.inputMissing` (66) or `.unreadableInput` (65).
    /// - Parameter pacingClock: what paced replays measure and wait on.
    public init(path: String, speed: ReplaySpeed = .asap, idleMilliseconds: Int32? = nil,
                pacingClock: MonotonicClock = SystemMonotonicClock()) throws {
        self.pacingClock = pacingClock
        if path == "-" {
            fd = 0
            name = "nmea:-"
        } else {
            // Opening a FIFO blocks until a writer comes, deaf to SIGTERM; with an idle limit
            // (track) it is opened at once and waited on by polling, which a stop interrupts.
            var info = stat()
            let isFIFO = stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO
            let opened = open(path, O_RDONLY | (isFIFO && idleMilliseconds != nil ? O_NONBLOCK : 0))
            if opened < 0 {
                let code = errno
                if code == ENOENT { throw GeolocateError.inputMissing(path: path) }
                throw GeolocateError.unreadableInput(reason: "\(path): \(ErrorText.posix(code))")
            }
            if fstat(opened, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR {
                close(opened)
                throw GeolocateError.unreadableInput(reason: "\(path) is a directory, not an NMEA log")
            }
            fd = opened
            name = "nmea:\(path)"
        }
        self.speed = speed
        self.idleMilliseconds = idleMilliseconds
        stream = NMEAEpochStream(fileDescriptor: fd, provider: .nmeaReplay, idleMilliseconds: idleMilliseconds)
    }

    deinit { if fd != 0 { close(fd) } }

    /// What the replay contained so far (accepted, skipped and unknown sentences).
    public var statistics: NMEAStatistics { stream.statistics }

    /// The UTC time of the latest dated epoch read.
    public var currentTime: Int64? { lastTimestamp }

    /// A replay holds nothing before it is read: last known comes from geolocate's own store.
    public func heldFix() throws -> Fix? { nil }

    /// Whether the whole log has been read.
    public private(set) var hasEnded = false

    /// Whether the last read found the input silent for the idle limit (a pipe, FIFO or tty).
    private var inputIsIdle = false

    /// The epoch in progress, when the input has gone silent: everything the receiver sent
    /// for it has come. Reading a file, or pacing, it has none: the rest of that epoch, and
    /// the next ones, are still to be read, not late.
    public func finishPending() -> Fix? {
        guard case .asap = speed, inputIsIdle else { return nil }
        return stream.finishEpoch()?.fix
    }

    /// Waits up to `timeoutMilliseconds` of log time for the next fix.
    ///
    /// With an idle limit (`SourceOpening.idleMilliseconds`) it also returns `.timedOut`, with
    /// no log time passed, when the input stayed silent that long or pacing holds the next
    /// epoch back: the caller (track) then commits and checks for a stop before waiting again.
    public func waitForFix(timeoutMilliseconds: Int) throws -> SourceWait {
        // The wait starts at the current virtual time; an epoch read past it is kept for the next wait.
        let limit = elapsed + timeoutMilliseconds
        while true {
            let epoch: Epoch
            if let pending = pendingEpoch.take() {
                epoch = pending
            } else {
                do {
                    guard let next = try nextEpoch() else { return .timedOut }
                    epoch = next
                    inputIsIdle = false
                } catch is NMEAReader.Idle {
                    inputIsIdle = true
                    return .timedOut
                }
            }
            if elapsed > limit || !waitUntilDue() {
                pendingEpoch = epoch
                return .timedOut
            }
            if let fix = epoch.fix { return .fix(fix) }
        }
    }

    /// The next epoch of the log, advancing virtual time (pacing is the caller's).
    /// - Throws: `GeolocateError.unreadableInput` naming the file when it cannot be read or
    ///   holds no NMEA.
    public func nextEpoch() throws -> Epoch? {
        let next: Epoch?
        do {
            next = try stream.next()
        } catch let error as NMEAReadError {
            throw GeolocateError.unreadableInput(reason: "\(name.dropFirst("nmea:".count)): \(error.reason)")
        }
        guard let epoch = next else {
            hasEnded = true
            return nil
        }
        if let previous = lastTimeOfDay {
            var delta = epoch.timeOfDay - previous
            if delta < -43_200_000 { delta += 86_400_000 }  // crossed midnight
            // A step back (out-of-order receiver, or logs joined together) does not rewind time.
            if delta > 0 { elapsed += delta }
        }
        lastTimeOfDay = epoch.timeOfDay
        if let timestamp = epoch.timestamp { lastTimestamp = max(lastTimestamp ?? timestamp, timestamp) }
        return epoch
    }

    /// Sleeps until the wall clock reaches the current virtual time under the replay speed;
    /// with an idle limit, sleeps at most that long and returns whether the time was reached.
    private func waitUntilDue() -> Bool {
        guard case .factor(let factor) = speed else { return true }
        let now = pacingClock.nowSeconds
        let start = wallStart ?? now
        wallStart = start
        let due = start + Double(elapsed) / 1000 / factor
        guard due > now else { return true }
        let slice = idleMilliseconds.map { Double($0) / 1000 } ?? .infinity
        let wait = min(due - now, slice)
        pacingClock.sleep(seconds: wait)
        return wait >= due - now
    }
}
