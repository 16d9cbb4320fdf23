import Foundation

/// Runs async work from synchronous code and waits for its result.
///
/// Track's loop is synchronous (it blocks on the source), but delivery and the street
/// geocoder are async; the loop waits for them here. It must not be called from a task, whose
/// thread it would block while the work needs one.
public enum BlockingTask {
    public static func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = Outcome<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            do { outcome.result = .success(try await operation()) } catch { outcome.result = .failure(error) }
            done.signal()
        }
        done.wait()
        return try outcome.result!.get()
    }

    /// Written by the task before it signals and read after the wait, so never at once.
    private final class Outcome<T>: @unchecked Sendable {
        var result: Result<T, Error>?
    }
}
