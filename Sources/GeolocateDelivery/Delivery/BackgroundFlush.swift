import GeolocateModel
import Synchronization

/// Track's flushes (`--transmit-interval`), run beside collection, one at a time: reading
/// the source and committing records never wait on an endpoint.
///
/// A flush still running when track stops is abandoned with the process; what it had not
/// marked delivered is sent again by the next flush, under the same `Idempotency-Key`.
package final class BackgroundFlush: Sendable {
    private let running = Atomic(false)
    private let flush: @Sendable () async -> Void

    package init(_ flush: @escaping @Sendable () async -> Void) {
        self.flush = flush
    }

    /// Starts a flush unless one is still running; returns at once.
    package func startIfIdle() {
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        Task(executorPreference: WorkExecutor.shared) {
            await self.flush()
            self.running.store(false, ordering: .releasing)
        }
    }
}
