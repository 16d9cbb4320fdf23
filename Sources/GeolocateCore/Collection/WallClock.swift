import Foundation

/// Tells the current UTC time in milliseconds since 1970; injected so tests and `--now` control it.
public protocol WallClock: Sendable {
    var nowMilliseconds: Int64 { get }
}

/// The system clock.
public struct SystemClock: WallClock {
    public init() {}
    public var nowMilliseconds: Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
}

/// A clock stopped at one instant, for `--now` and tests.
public struct FixedClock: WallClock {
    public let nowMilliseconds: Int64
    public init(_ milliseconds: Int64) { nowMilliseconds = milliseconds }
}

/// Elapsed time and waiting: replay pacing, deadlines, commit windows, backoff; injected so
/// nothing else reads the system's monotonic clock or sleeps on its own, and tests move time
/// by hand instead of waiting for it.
public protocol MonotonicClock: Sendable {
    /// Seconds since a fixed but arbitrary point; never goes back.
    var nowSeconds: Double { get }
    /// Waits `seconds` (at most an hour at a time).
    func sleep(seconds: Double)
}

extension MonotonicClock {
    /// Milliseconds since `start` (a `nowSeconds` reading), rounded down.
    public func milliseconds(since start: Double) -> Int64 { Int64(max(0, nowSeconds - start) * 1000) }
}

/// The system's monotonic clock (`CLOCK_MONOTONIC`).
public struct SystemMonotonicClock: MonotonicClock {
    public init() {}

    public var nowSeconds: Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    public func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        usleep(useconds_t(min(seconds, 3600) * 1_000_000))
    }
}

/// A point some milliseconds ahead on a monotonic clock: how long a wait that must end
/// (an adapter's read, a broker's answer) may still take.
public struct Deadline: Sendable {
    private let end: Double
    private let clock: MonotonicClock

    public init<Milliseconds: BinaryInteger>(milliseconds: Milliseconds, clock: MonotonicClock = SystemMonotonicClock()) {
        self.clock = clock
        end = clock.nowSeconds + Double(max(Int64(milliseconds), 0)) / 1000
    }

    /// What is left, never below 0.
    public var remainingMicroseconds: Int64 { Int64(max(0, end - clock.nowSeconds) * 1_000_000) }

    public var remainingMilliseconds: Int64 { remainingMicroseconds / 1000 }

    public var hasPassed: Bool { remainingMicroseconds == 0 }
}
