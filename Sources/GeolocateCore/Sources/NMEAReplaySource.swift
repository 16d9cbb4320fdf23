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

    /// Parses `asap`, `realtime` or `Nx` (such as `10x` or `0.5x`).
    public init(parsing text: String) throws {
        switch text.lowercased() {
        case "asap": self = .asap
        case "realtime": self = .factor(1)
        default:
            guard text.lowercased().hasSuffix("x"), let value = Double(text.dropLast()),
                  value.isFinite, value > 0
            else {
                throw GeolocateError.usage(
                    "invalid replay speed '\(text)' (use asap, realtime or a factor such as 10x)")
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
    /// Virtual milliseconds elapsed since the first epoch.
    private var elapsed = 0
    private var lastTimeOfDay: Int?
    private var lastTimestamp: Int64?
    private var wallStart: Double?
    /// An epoch read past the end of the last wait, first in line for the next one.
    private var pendingEpoch: Epoch?

    /// Opens `path` (`-` for standard input).
    /// - Throws: `GeolocateError.inputMissing` (66) or `.unreadableInput` (65).
    public init(path: String, speed: ReplaySpeed = .asap) throws {
        if path == "-" {
            fd = 0
            name = "nmea:-"
        } else {
            let opened = open(path, O_RDONLY)
            if opened < 0 {
                let code = errno
                if code == ENOENT { throw GeolocateError.inputMissing(path: path) }
                throw GeolocateError.unreadableInput(reason: "\(path): \(String(cString: strerror(code)))")
            }
            var info = stat()
            if fstat(opened, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR {
                close(opened)
                throw GeolocateError.unreadableInput(reason: "\(path) is a directory, not an NMEA log")
            }
            fd = opened
            name = "nmea:\(path)"
        }
        self.speed = speed
        stream = NMEAEpochStream(fileDescriptor: fd, provider: .nmeaReplay)
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

    public func waitForFix(timeoutMilliseconds: Int) throws -> SourceWait {
        // The wait starts at the current virtual time; an epoch read past it is kept for the next wait.
        let limit = elapsed + timeoutMilliseconds
        while let epoch = try pendingEpoch.take() ?? nextEpoch() {
            if elapsed > limit {
                pendingEpoch = epoch
                return .timedOut
            }
            if let fix = epoch.fix { return .fix(fix) }
        }
        return .timedOut
    }

    /// The next epoch of the log, advancing virtual time and pacing against the wall clock.
    public func nextEpoch() throws -> Epoch? {
        guard let epoch = try stream.next() else {
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
        pace()
        return epoch
    }

    private func pace() {
        guard case .factor(let factor) = speed else { return }
        let now = NMEAReplaySource.monotonicSeconds()
        let start = wallStart ?? now
        wallStart = start
        let due = start + Double(elapsed) / 1000 / factor
        if due > now { usleep(useconds_t(min((due - now) * 1_000_000, 3_600_000_000))) }
    }

    private static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
