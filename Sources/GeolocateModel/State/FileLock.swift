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
    ///   (`ENOLCK` on a file system without locks, say), never returning without the lock;
    ///   `.stateFileRefused` when a link, FIFO or another user's file is in its place.
    package convenience init(path: String) throws {
        let (directory, name) = try FileLock.directory(of: path)
        try self.init(name, in: directory)
    }

    /// Waits for the lock on the file `name` in `directory`, as `init(path:)` does.
    package convenience init(_ name: String, in directory: OpenDirectory) throws {
        let fd = try FileLock.openFile(name, in: directory)
        let path = directory.path(of: name)
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
        let (directory, name) = try FileLock.directory(of: path)
        return try ifFree(name, in: directory)
    }

    /// The lock on the file `name` in `directory` if no other process holds it, else `nil`.
    package static func ifFree(_ name: String, in directory: OpenDirectory) throws -> FileLock? {
        let fd = try FileLock.openFile(name, in: directory)
        let path = directory.path(of: name)
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

    /// The directory of the lock file `path`, made if needed, and the file's name in it.
    private static func directory(of path: String) throws -> (OpenDirectory, String) {
        do {
            guard let parent = try OpenDirectory.parent(of: path, create: true) else { throw POSIXError(.ENOENT) }
            return parent
        } catch {
            throw GeolocateError.stateNotWritable(path: path, reason: ErrorText.plain(error))
        }
    }

    /// Opens (creating) the lock file `name` in `directory`, never through a link, and never a
    /// FIFO, device or another user's file (SPEC §14).
    private static func openFile(_ name: String, in directory: OpenDirectory) throws -> Int32 {
        // Read-only is enough for flock, and lets a lock that belongs to the directory's owner be taken.
        guard let opened = try directory.openFile(name, .read, create: true) else {
            throw GeolocateError.stateNotWritable(path: directory.path(of: name), reason: "it cannot be made")
        }
        return opened.descriptor
    }

    /// Closes `fd` after `flock` failed with `errno`, and says why the lock cannot be had.
    private static func failure(_ fd: Int32, path: String) -> GeolocateError {
        let code = errno
        close(fd)
        return GeolocateError.stateNotWritable(path: path, reason: "it cannot be locked (\(ErrorText.posix(code)))")
    }

    deinit { close(fd) }
}
