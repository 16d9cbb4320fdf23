import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An exclusive lock between processes on a file in the state directory, held until released
/// (deinit). The kernel releases it when its process dies, even by SIGKILL.
///
/// Flushes take turns on `flush.lock`; opening the spool takes `spool.lock`, so two processes
/// creating a new spool at once do not both run its migrations.
package final class FileLock {
    private let fd: Int32

    /// Waits for the lock on `path`, creating the file (and its directory) if needed, and
    /// returns with it held.
    /// - Throws: `GeolocateError.stateNotWritable` when the file cannot be opened or locked
    ///   (`ENOLCK` on a file system without locks, say), never returning without the lock.
    package convenience init(path: String) throws {
        let fd = try FileLock.openFile(path)
        while flock(fd, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            throw FileLock.failure(fd, path: path)
        }
        self.init(holding: fd)
    }

    /// The lock on `path` if no other process holds it, else `nil`.
    /// - Throws: `GeolocateError.stateNotWritable` when the file cannot be opened or locked
    ///   for another reason than another process holding it.
    package static func ifFree(path: String) throws -> FileLock? {
        let fd = try FileLock.openFile(path)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK {
                close(fd)
                return nil
            }
            throw FileLock.failure(fd, path: path)
        }
        return FileLock(holding: fd)
    }

    private init(holding fd: Int32) {
        self.fd = fd
    }

    /// Opens (creating) the lock file `path` in a directory made if needed, owned as the directory is.
    private static func openFile(_ path: String) throws -> Int32 {
        let directory = (path as NSString).deletingLastPathComponent
        try? Paths.makeDirectories(directory)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw GeolocateError.stateNotWritable(path: path, reason: ErrorText.posix(errno))
        }
        Paths.adoptDirectoryOwner(fd, in: directory)
        return fd
    }

    /// Closes `fd` after `flock` failed with `errno`, and says why the lock cannot be had.
    private static func failure(_ fd: Int32, path: String) -> GeolocateError {
        let code = errno
        close(fd)
        return GeolocateError.stateNotWritable(path: path, reason: "it cannot be locked (\(ErrorText.posix(code)))")
    }

    deinit { close(fd) }
}
