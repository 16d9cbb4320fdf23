import Foundation
import Synchronization

/// Runs async work from synchronous code and waits for its result.
///
/// Track's loop is synchronous (it blocks on the source), but delivery and the street
/// geocoder are async; the loop waits for them here. It must not be called from a task, whose
/// thread it would block while the work needs one.
package enum BlockingTask {
    package static func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = Mutex<Result<T, Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<T, Error>
            do { result = .success(try await operation()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0 }!.get()
    }
}
