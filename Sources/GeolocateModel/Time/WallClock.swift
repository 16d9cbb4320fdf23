import CSystemClock
import Foundation

/// Tells the current UTC time in milliseconds since 1970; injected so tests and `--now` control it.
package protocol WallClock: Sendable {
    var nowMilliseconds: Int64 { get }
    /// This boot and the monotonic time since it, when the clock is the system's: a live
    /// fix's age is measured on it within one boot, so a clock step does not change it.
    var boot: BootTime? { get }
    /// Whether the kernel says the clock is synchronised (`adjtimex`, as `timedatectl` shows);
    /// `nil` when unknown or not the system's clock.
    var isSynchronized: Bool? { get }
}

extension WallClock {
    package var boot: BootTime? { nil }
    package var isSynchronized: Bool? { nil }
}

/// A moment on the monotonic clock of one boot.
package struct BootTime: Sendable, Equatable {
    /// `/proc/sys/kernel/random/boot_id`: differs after every boot.
    package var id: String
    /// `CLOCK_BOOTTIME` in milliseconds: counts suspended time too, never steps.
    package var uptimeMilliseconds: Int64

    package init(id: String, uptimeMilliseconds: Int64) {
        self.id = id
        self.uptimeMilliseconds = uptimeMilliseconds
    }
}

/// The system clock.
package struct SystemClock: WallClock {
    package init() {}
    package var nowMilliseconds: Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    package var boot: BootTime? {
        guard let id = SystemClock.bootID else { return nil }
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return BootTime(id: id, uptimeMilliseconds: Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000)
    }

    package var isSynchronized: Bool? {
        switch geolocate_clock_synchronized() {
        case 1: return true
        case 0: return false
        default: return nil
        }
    }

    private static let bootID: String? = {
        guard case .success(let data) = BoundedFile.read("/proc/sys/kernel/random/boot_id", limit: 128) else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }()
}

/// A clock stopped at one instant, for `--now` and tests.
package struct FixedClock: WallClock {
    package let nowMilliseconds: Int64
    package init(_ milliseconds: Int64) { nowMilliseconds = milliseconds }
}

/// Elapsed time and waiting: replay pacing, deadlines, commit windows, backoff; injected so
/// tests move time by hand instead of waiting for it. Outside this file nothing reads the
/// system's time or sleeps on it (`TimeReadTests` checks every source file).
package protocol MonotonicClock: Sendable {
    /// Seconds since a fixed but arbitrary point; never goes back.
    var nowSeconds: Double { get }
    /// Waits `duration` (at most an hour at a time).
    func sleep(for duration: Duration)
}

extension MonotonicClock {
    /// Waits `seconds` of this clock's time: a wait until a `nowSeconds` reading.
    package func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        sleep(for: .microseconds(Int64(min(seconds, 3600) * 1_000_000)))
    }

    /// Milliseconds since `start` (a `nowSeconds` reading), rounded down.
    package func milliseconds(since start: Double) -> Int64 { Int64(max(0, nowSeconds - start) * 1000) }
}

/// The system's monotonic clock (`CLOCK_MONOTONIC`).
package struct SystemMonotonicClock: MonotonicClock {
    package init() {}

    package var nowSeconds: Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    package func sleep(for duration: Duration) {
        let microseconds = min(duration, .seconds(3600)).microseconds
        guard microseconds > 0 else { return }
        usleep(useconds_t(microseconds))
    }
}

/// A point some milliseconds ahead on a monotonic clock: how long a wait that must end
/// (an adapter's read, a broker's answer) may still take.
package struct Deadline: Sendable {
    private let end: Double
    private let clock: MonotonicClock

    package init<Milliseconds: BinaryInteger>(milliseconds: Milliseconds, clock: MonotonicClock) {
        self.clock = clock
        end = clock.nowSeconds + Double(max(Int64(milliseconds), 0)) / 1000
    }

    /// What is left, never below 0.
    package var remainingMicroseconds: Int64 { Int64(max(0, end - clock.nowSeconds) * 1_000_000) }

    package var remainingMilliseconds: Int64 { remainingMicroseconds / 1000 }

    package var hasPassed: Bool { remainingMicroseconds == 0 }

    /// Waits until `semaphore` is signalled or the deadline passes; whether it was signalled.
    ///
    /// Dispatch measures the wait on its own clock, from what is left on this one: the one
    /// place outside the clocks above where time is read.
    package func wait(for semaphore: DispatchSemaphore) -> Bool {
        semaphore.wait(timeout: .now() + .microseconds(Int(remainingMicroseconds))) == .success
    }
}

/// Suspends the calling task for `milliseconds` of the system's monotonic time: the async
/// counterpart of `SystemMonotonicClock.sleep`, for waits inside tasks (flush's backoff, an
/// HTTP answer's deadline); a cancelled task wakes at once.
package func systemTaskSleep(milliseconds: Int64) async {
    guard milliseconds > 0 else { return }
    try? await Task.sleep(for: .milliseconds(milliseconds))
}
