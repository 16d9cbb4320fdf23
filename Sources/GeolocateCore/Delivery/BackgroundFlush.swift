import Foundation

/// Track's flushes (`--transmit-interval`), run beside collection, one at a time: reading
/// the source and committing records never wait on an endpoint.
///
/// A flush still running when track stops is abandoned with the process; what it had not
/// marked delivered is sent again by the next flush, under the same `Idempotency-Key`.
public final class BackgroundFlush: @unchecked Sendable {
    // @unchecked: `running` is only read and written under `lock`.
    private let lock = NSLock()
    private var running = false
    private let flush: @Sendable () async -> Void

    public init(_ flush: @escaping @Sendable () async -> Void) {
        self.flush = flush
    }

    /// Starts a flush unless one is still running; returns at once.
    public func startIfIdle() {
        guard setRunning(true) else { return }
        Task {
            await flush()
            _ = setRunning(false)
        }
    }

    /// Sets `running`; returns false when it already had that value.
    private func setRunning(_ value: Bool) -> Bool {
        lock.withLock {
            guard running != value else { return false }
            running = value
            return true
        }
    }
}
