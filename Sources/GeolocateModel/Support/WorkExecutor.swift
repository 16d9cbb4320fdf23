import Dispatch

/// The executor geolocate's commands run their tasks on: threads Dispatch adds as they block,
/// instead of Swift's cooperative pool of one thread per core.
///
/// The core blocks in places a pool thread must not: a spool another process holds waits out
/// SQLite's busy timeout (up to 30 s), flush waits for its file lock, `--post` spools before it
/// sends. On a 2-core device two such waits would stall every task, the HTTP client's
/// included. Each job gets a serial queue of its own, which Dispatch runs on an overcommitting
/// thread, so a blocked job never holds up another.
package final class WorkExecutor: TaskExecutor {
    /// The one every command uses (`withTaskExecutorPreference(WorkExecutor.shared)`).
    package static let shared = WorkExecutor()

    private init() {}

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        DispatchQueue(label: "geolocate.work").async { job.runSynchronously(on: executor) }
    }
}
