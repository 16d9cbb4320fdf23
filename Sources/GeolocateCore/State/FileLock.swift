import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An exclusive lock between processes on a file in the state directory, held until released
/// (deinit). The kernel releases it when its process dies, even by SIGKILL.
///
/// Flushes take turns on `flush.lock`; opening the spool takes `spool.lock`, so two processes
/// creating a new spool at once do not both run its migrations.
public final class FileLock {
    private let fd: Int32

    /// Waits for the lock on `path`, creating the file (and its directory) if needed.
    /// - Throws: `GeolocateError.stateNotWritable` when the file cannot be opened.
    public convenience init(path: String) throws {
        // Waiting, it returns only with the lock.
        try self.init(path: path, wait: true)!
    }

    /// The lock on `path` if no other process holds it, else `nil`.
    /// - Throws: `GeolocateError.stateNotWritable` when the file cannot be opened.
    public static func ifFree(path: String) throws -> FileLock? {
        try FileLock(path: path, wait: false)
    }

    private init?(path: String, wait: Bool) throws {
        let directory = (path as NSString).deletingLastPathComponent
        try? Paths.makeDirectories(directory)
        fd = open(path, O_RDWR | O_CREAT, 0o600)
        guard fd >= 0 else {
            throw GeolocateError.stateNotWritable(path: path, reason: ErrorText.posix(errno))
        }
        Paths.adoptDirectoryOwner(fd, in: directory)
        while flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            close(fd)
            return nil
        }
    }

    deinit { close(fd) }
}
