import Foundation
import GRDB
import GeolocateConfig
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

/// A SQLite database of the state directory opened for reading only, by a user who may not
/// be able to write there (a monitoring user in the service's group, an auditor, root looking
/// at the service user's spool), creating, changing and growing nothing (SPEC §12).
///
/// SQLite's plain read-only open (`mode=ro`, `SQLITE_OPEN_READONLY`) is not enough for a WAL
/// database: it creates the `-wal` and `-shm` files when they are missing and the directory is
/// writable (root then leaves root-owned files the service cannot open), and fails with
/// `SQLITE_READONLY_DIRECTORY` when it is not. So the files decide how it is opened:
///
/// - No `-wal` file: every commit is in the database file, which is read with `immutable=1`
///   (no locks, no companion files). Immutable alone could read a torn state if a writer
///   started and checkpointed meanwhile, so it is used only here, under SQLite's own SHARED
///   lock taken by hand (which keeps a closing writer from checkpointing into the file), and
///   the file's identity (inode, size, mtime) is checked after each read: a change means
///   another read (`changedWhileRead`).
/// - `-wal` and `-shm` both present (a writer is running, or was killed): the normal
///   read-only open, which reads the log through the existing `-shm`, even one it may not
///   write (SQLite 3.22 and later). Both stay while the SHARED lock is held.
/// - A `-wal` without its `-shm`: refused; a command that writes the spool recovers it.
///
/// Rollback-journal databases (the geocoder cache) take the plain read-only open, which
/// creates nothing. URIs need SQLite built with `SQLITE_USE_URI`, as Debian's is; without it
/// the open fails with an error rather than reading the wrong file.
package final class ReadOnlyDatabase: Sendable {
    package let path: String
    package let queue: DatabaseQueue
    /// The database file as it was opened, for an immutable read; `nil` otherwise.
    private let identity: FileIdentity?
    /// The descriptor holding the SHARED lock, or -1.
    private let lockDescriptor: Int32
    private let elapsed: MonotonicClock

    /// What a read-only open found wrong.
    package enum Failure: Error, Equatable {
        /// The file is not a SQLite database, or SQLite finds it malformed.
        case damaged(String)
        /// It cannot be read: permissions, a FIFO in its place, a lock held too long.
        case unreadable(String)
        /// An immutable read saw the file change under it; reading again sees the new state.
        case changedWhileRead
    }

    /// Opens `path` for reading; `nil` when there is no such file, or it is empty.
    ///
    /// The file and its `-wal` and `-shm` are judged as every state file is (`OpenDirectory`):
    /// a link, a FIFO or another user's file in their place is refused, never read.
    /// - Throws: `Failure`; `GeolocateError.stateFileRefused` (73).
    package static func open(_ path: String, elapsed: MonotonicClock) throws -> ReadOnlyDatabase? {
        let opened: OpenDirectory.OpenedFile?
        let directory: OpenDirectory
        let name = (path as NSString).lastPathComponent
        do {
            guard let parent = try OpenDirectory.open((path as NSString).deletingLastPathComponent, create: false) else { return nil }
            directory = parent
            opened = try directory.openFile(name, .read)
        } catch let error as POSIXError {
            if error.code == .ENOTDIR { return nil }
            throw Failure.unreadable(ErrorText.posix(error.code.rawValue))
        } catch let error as GeolocateError where error.isStateNotWritable {
            throw Failure.unreadable(error.reason ?? error.description)
        }
        guard let fd = opened?.descriptor else { return nil }
        // Kept open only to hold the lock of a WAL database; closed on every other way out.
        var keep = false
        defer { if !keep { close(fd) } }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Failure.unreadable(ErrorText.posix(errno)) }
        var header = [UInt8](repeating: 0, count: 100)
        let count = pread(fd, &header, header.count, 0)
        guard count >= 0 else { throw Failure.unreadable(ErrorText.posix(errno)) }
        // An empty file is an empty database: nothing spooled yet.
        if count == 0 { return nil }
        guard count == 100, header.starts(with: Array("SQLite format 3\0".utf8)) else {
            throw Failure.damaged("it is not a SQLite database")
        }
        try directory.check(["-wal", "-shm", "-journal"].map { name + $0 })
        // Bytes 18 and 19 are 2 in a WAL database.
        guard header[18] == 2 else {
            return try ReadOnlyDatabase(path: path, uri: NoFollowDatabase.uri(name, in: directory, query: ["mode=ro"]), identity: nil,
                                        lockDescriptor: -1, elapsed: elapsed)
        }
        try sharedLock(fd, elapsed: elapsed)
        let wal = directory.exists(name + "-wal"), shm = directory.exists(name + "-shm")
        if wal && !shm {
            throw Failure.unreadable("\(path)-wal has no \(path)-shm beside it; a geolocate command that writes (such as flush) recovers it")
        }
        let database = try ReadOnlyDatabase(path: path, uri: NoFollowDatabase.uri(name, in: directory, query: [wal ? "mode=ro" : "immutable=1"]),
                                            identity: wal ? nil : FileIdentity(info), lockDescriptor: fd, elapsed: elapsed)
        keep = true
        return database
    }

    private init(path: String, uri: String, identity: FileIdentity?, lockDescriptor: Int32, elapsed: MonotonicClock) throws {
        self.path = path
        self.elapsed = elapsed
        self.identity = identity
        self.lockDescriptor = lockDescriptor
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(2)
        do {
            queue = try DatabaseQueue(path: uri, configuration: configuration)
        } catch let error as DatabaseError where NoFollowDatabase.refusedALink(error) {
            throw NoFollowDatabase.refusal(of: path)
        } catch {
            throw ReadOnlyDatabase.failure(error)
        }
    }

    deinit {
        if lockDescriptor >= 0 { close(lockDescriptor) }
    }

    /// Runs `body` in one read transaction. When an immutable read saw the file change, the
    /// database is opened afresh (a writer's `-wal` and `-shm` are there now) and, with
    /// `again`, `body` runs once more there.
    /// - Throws: `Failure` (`.changedWhileRead` when the change stands, or without `again`),
    ///   or what `body` throws that is no database error.
    package func read<T>(again: Bool = true, _ body: (Database) throws -> T) throws -> T {
        let result: T
        do { result = try queue.read(body) } catch {
            throw ReadOnlyDatabase.failure(error)
        }
        guard let identity else { return result }
        var info = stat()
        if stat(path, &info) == 0, FileIdentity(info) == identity { return result }
        guard again, let fresh = try ReadOnlyDatabase.open(path, elapsed: elapsed) else { throw Failure.changedWhileRead }
        return try fresh.read(again: false, body)
    }

    /// A SQLite error as a `Failure`: corruption is damage, anything else unreadable.
    package static func failure(_ error: Error) -> Error {
        guard let error = error as? DatabaseError else { return error }
        let text = error.message ?? "\(error.resultCode)"
        switch error.resultCode.primaryResultCode {
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: return Failure.damaged(text)
        default: return Failure.unreadable(text)
        }
    }

    /// Takes SQLite's SHARED lock (a read lock on the 510 bytes after its PENDING byte, as
    /// its unix VFS does) as an open-file-description lock, which SQLite's own connection
    /// in this process cannot release by closing its descriptor. A writer holding EXCLUSIVE
    /// (a checkpoint as it closes) is waited for, up to 2 s.
    private static func sharedLock(_ fd: Int32, elapsed: MonotonicClock) throws {
        /// `F_OFD_SETLK` (Linux 3.15), which Glibc's Swift module does not export.
        let setOFDLock: Int32 = 37
        var lock = flock()
        lock.l_type = Int16(F_RDLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0x4000_0002
        lock.l_len = 510
        let start = elapsed.nowSeconds
        while fcntl(fd, setOFDLock, &lock) != 0 {
            guard errno == EAGAIN || errno == EACCES || errno == EINTR else { throw Failure.unreadable(ErrorText.posix(errno)) }
            guard elapsed.milliseconds(since: start) < 2000 else { throw Failure.unreadable("it stayed locked by another process for 2 s") }
            elapsed.sleep(for: .milliseconds(10))
        }
    }
}

/// A file as `stat` saw it: the same inode, size and mtime mean no one wrote it since.
package struct FileIdentity: Equatable, Sendable {
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    package var modifiedSeconds: Int
    package var modifiedNanoseconds: Int

    package init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modifiedSeconds = info.st_mtim.tv_sec
        modifiedNanoseconds = info.st_mtim.tv_nsec
    }
}
