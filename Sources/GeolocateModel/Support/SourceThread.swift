import Foundation

/// Runs blocking work (libgps's connect, `poll` on gpsd's socket, reading a replay) on a
/// thread of its own and resumes the calling task with its result, so no thread of Swift's
/// cooperative pool blocks on a source while other tasks (a geocoder request, a flush) wait
/// for one.
package enum SourceThread {
    package static func run<T: Sendable>(_ work: @escaping () throws -> T) async throws -> T {
        let handOver = HandOver(work: work)
        return try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try handOver.work() }) }.start()
        }
    }

    /// The work, moved to the new thread.
    private final class HandOver<T>: @unchecked Sendable {
        // @unchecked: only the new thread calls `work`, while the task that made it is
        // suspended until that thread resumes it; no two threads use it at once.
        let work: () throws -> T
        init(work: @escaping () throws -> T) { self.work = work }
    }
}
