import Foundation
import GeolocateModel
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Ends a login hook by its deadline, whatever gpsd, the spool or an endpoint is doing
/// (SPEC §14: the action's timeout + 200 ms).
///
/// A thread of its own waits (on a semaphore that a new deadline or a cancel signals, so it
/// never polls) until the deadline on the monotonic clock and then ends the process
/// with the exit code already decided (the decision was logged; a record still being sent
/// stays in the spool for the next flush), or with what `expired` returns when there was no
/// decision yet. SQLite's journal makes an exit in the middle of a write safe.
package final class HookDeadline: Sendable {
    private struct State {
        var deadline: Double
        var decided: Int32?
        var cancelled = false
    }

    private let state: Mutex<State>
    /// Signalled when the deadline moves or the wait is cancelled: the thread looks again.
    private let changed = DispatchSemaphore(value: 0)
    private let clock: MonotonicClock
    private let end: @Sendable (Int32) -> Void
    private let expired: @Sendable () -> Int32

    /// Starts the wait: the process ends at `clock.nowSeconds + seconds` unless it ends first.
    /// - Parameters:
    ///   - end: ends the process with its exit code (`_exit`; a test's collector).
    ///   - expired: logs that no decision was made in time and returns the exit code.
    package init(seconds: Double, clock: MonotonicClock, end: @escaping @Sendable (Int32) -> Void = { _exit($0) },
                 expired: @escaping @Sendable () -> Int32) {
        self.clock = clock
        self.end = end
        self.expired = expired
        state = Mutex(State(deadline: clock.nowSeconds + seconds))
        let thread = Thread { [self] in self.wait() }
        thread.start()
    }

    /// Moves the deadline to `seconds` after `start` (a `nowSeconds` reading): the action's own
    /// timeout is known only once the configuration is read.
    package func reset(seconds: Double, from start: Double) {
        state.withLock { $0.deadline = start + seconds }
        changed.signal()
    }

    /// Records the exit code of the decision made, which the deadline ends the process with.
    package func decided(_ code: Int32) {
        state.withLock { $0.decided = code }
    }

    /// Stops the wait: the gate ended before its deadline.
    package func cancel() {
        state.withLock { $0.cancelled = true }
        changed.signal()
    }

    /// The time left before the deadline, in milliseconds (0 when past).
    package var remainingMilliseconds: Int64 {
        let deadline = state.withLock { $0.deadline }
        return max(0, Int64((deadline - clock.nowSeconds) * 1000))
    }

    private func wait() {
        while true {
            let (deadline, decided, cancelled) = state.withLock { ($0.deadline, $0.decided, $0.cancelled) }
            if cancelled { return }
            let left = deadline - clock.nowSeconds
            if left <= 0 {
                end(decided ?? expired())
                return
            }
            _ = Deadline(milliseconds: Int64((left * 1000).rounded(.up)), clock: clock).wait(for: changed)
        }
    }
}
