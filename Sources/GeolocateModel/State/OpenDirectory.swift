import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A directory held open by its descriptor, whose files are opened relative to it and never
/// through a link: how geolocate treats a state directory that another user may write
/// (SPEC §14, "The user does not control the hook").
///
/// Root runs the gate in `/var/lib/geolocate`, which belongs to the `geolocate` service user:
/// anything in it may have been planted by that user. So every name is judged before it is
/// used, by `fstatat` without following it and again by `fstat` of what was opened, and
/// refused (`GeolocateError.stateFileRefused`, 73) when it is a symbolic link, a FIFO, a
/// device or socket, a file with other hard links, or a file of a user who is neither this
/// process's, root, nor the directory's owner. Nothing is ever `chown`ed but a file this
/// process just created with `O_EXCL`.
///
/// The directory's own path is followed as given (it is the administrator's or the user's
/// choice); `privateSubdirectory` opens a subdirectory without following it.
package final class OpenDirectory {
    package let path: String
    package let descriptor: Int32
    /// The directory's owner and group, from `fstat` of the descriptor.
    package let owner: uid_t
    package let group: gid_t

    private init(path: String, descriptor: Int32, info: stat) {
        self.path = path
        self.descriptor = descriptor
        owner = info.st_uid
        group = info.st_gid
    }

    deinit { close(descriptor) }

    /// Opens the directory `path`, creating it and its missing parents (0700) when `create`.
    /// - Returns: `nil` when it does not exist and `create` is false.
    /// - Throws: `POSIXError` when it cannot be made or opened (`ENOTDIR` when it, or a part
    ///   of its path, is a file).
    package static func open(_ path: String, create: Bool) throws -> OpenDirectory? {
        if create, !path.isEmpty { try Paths.makeDirectories(path) }
        let fd = Glibc.open(path.isEmpty ? "." : path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT, !create { return nil }
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        var info = stat()
        fstat(fd, &info)
        return OpenDirectory(path: path, descriptor: fd, info: info)
    }

    /// The state directory `path`, made (0700) if missing.
    /// - Throws: `GeolocateError.stateNotWritable` (73) naming `path` when it cannot be made
    ///   or opened (a file in its place, a read-only file system).
    package static func state(_ path: String) throws -> OpenDirectory {
        do {
            guard let directory = try open(path, create: true) else { throw POSIXError(.ENOENT) }
            return directory
        } catch {
            throw GeolocateError.stateNotWritable(path: path, reason: ErrorText.plain(error))
        }
    }

    /// The directory holding the file `path`, and the file's name in it.
    package static func parent(of path: String, create: Bool) throws -> (directory: OpenDirectory, name: String)? {
        let name = (path as NSString).lastPathComponent
        let parent = (path as NSString).deletingLastPathComponent
        guard let directory = try open(parent, create: create) else { return nil }
        return (directory, name)
    }

    /// The path of `name` in this directory, for messages and for libraries that open by path.
    package func path(of name: String) -> String {
        path.isEmpty ? name : path.hasSuffix("/") ? path + name : path + "/" + name
    }

    /// The path of `name` in this directory as the kernel names the directory now (its
    /// descriptor's link in `/proc/self/fd`): no symbolic link on the way, for a library that
    /// opens by path and refuses links (SQLite through `NoFollowDatabase`). `path(of:)` when
    /// `/proc` is not there.
    package func resolvedPath(of name: String) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/fd/\(descriptor)", &buffer, Int(PATH_MAX))
        guard count > 0, buffer[0] == CChar(UInt8(ascii: "/")) else { return path(of: name) }
        let directory = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return directory == "/" ? "/" + name : directory + "/" + name
    }

    /// Opens, making it if missing, the subdirectory `name` that only this user may enter
    /// (0700): root's `gate/` in the service user's state directory.
    ///
    /// A link, a file, or a directory of another user or open to others in its place is
    /// refused: the directory's owner can rename root's subdirectory away and put its own
    /// there, so it is opened without following and judged by what was opened.
    package func privateSubdirectory(_ name: String) throws -> OpenDirectory {
        let fullPath = path(of: name)
        if mkdirat(descriptor, name, 0o700) != 0, errno != EEXIST {
            throw GeolocateError.stateNotWritable(path: fullPath, reason: ErrorText.posix(errno))
        }
        let fd = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ELOOP || code == ENOTDIR {
                var info = stat()
                let kind = fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? OpenDirectory.kind(info) : "not a directory"
                throw GeolocateError.stateFileRefused(path: fullPath, reason: "it is \(kind), not a directory of its own")
            }
            throw GeolocateError.stateNotWritable(path: fullPath, reason: ErrorText.posix(code))
        }
        var info = stat()
        fstat(fd, &info)
        guard info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
            close(fd)
            throw GeolocateError.stateFileRefused(
                path: fullPath, reason: "it must be uid \(geteuid())'s own and closed to others (0700), and it is uid \(info.st_uid)'s, mode \(String(info.st_mode & 0o7777, radix: 8))")
        }
        return OpenDirectory(path: fullPath, descriptor: fd, info: info)
    }

    // MARK: Judging a name

    /// Why the entry `name` may not be used as one of our files, or `nil` when it may (or
    /// does not exist).
    package func problem(with name: String) -> String? {
        var info = stat()
        guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return problem(info)
    }

    /// Whether there is an entry `name` (of any kind; a link is not followed).
    package func exists(_ name: String) -> Bool {
        var info = stat()
        return fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0
    }

    /// Throws `stateFileRefused` for the first of `names` that may not be used as ours: the
    /// files a library opens by path beside one we opened (SQLite's `-wal`, `-shm`, `-journal`).
    package func check(_ names: [String]) throws {
        for name in names {
            if let problem = problem(with: name) { throw GeolocateError.stateFileRefused(path: path(of: name), reason: problem) }
        }
    }

    /// Why a file described by `info` is not ours to use, or `nil`; a file of one of `also`
    /// is ours too (the service user's system key, which root's gate signs with).
    private func problem(_ info: stat, also: Set<uid_t> = []) -> String? {
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG else { return "it is \(OpenDirectory.kind(info)), not a regular file" }
        // Another name of the same file may be anywhere on the file system: /etc/shadow,
        // linked here where protected_hardlinks is off.
        guard info.st_nlink == 1 else { return "it has \(info.st_nlink) hard links, so it may be another file's name too" }
        let me = geteuid()
        guard info.st_uid == me || info.st_uid == 0 || info.st_uid == owner || also.contains(info.st_uid) else {
            return "it belongs to uid \(info.st_uid), neither this user (uid \(me)) nor the directory's owner (uid \(owner))"
        }
        return nil
    }

    /// "a symbolic link", "a FIFO"… for what `info` describes.
    private static func kind(_ info: stat) -> String {
        switch info.st_mode & S_IFMT {
        case S_IFREG: return "a regular file"
        case S_IFLNK: return "a symbolic link"
        case S_IFIFO: return "a FIFO"
        case S_IFDIR: return "a directory"
        case S_IFCHR, S_IFBLK: return "a device"
        case S_IFSOCK: return "a socket"
        default: return "a special file"
        }
    }

    // MARK: Opening

    /// How `openFile` opens.
    package enum Access {
        case read
        case readWrite
    }

    /// An open descriptor of a file in this directory, and whether this call made the file.
    package struct OpenedFile {
        package let descriptor: Int32
        package let created: Bool
    }

    /// Opens the file `name` without following a link, after judging it (a file of a user in
    /// `alsoOwnedBy` passes as ours); with `create`, a
    /// missing file is made with `O_EXCL` and `permissions`, and (when this process is root
    /// and the directory is another user's) given to the directory's owner and group, so
    /// the service can open what root made.
    /// - Returns: `nil` when it does not exist and `create` is false. The caller closes it.
    /// - Throws: `GeolocateError.stateFileRefused` for a file that may not be ours;
    ///   `.stateNotWritable` when it cannot be opened or made.
    package func openFile(_ name: String, _ access: Access, create: Bool = false, permissions: mode_t = 0o600,
                          alsoOwnedBy also: Set<uid_t> = []) throws -> OpenedFile? {
        let fullPath = path(of: name)
        let flags = (access == .read ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC
        // Two tries: a file removed between looking and opening is made on the second.
        for _ in 0..<2 {
            var before = stat()
            if fstatat(descriptor, name, &before, AT_SYMLINK_NOFOLLOW) == 0 {
                if let problem = problem(before, also: also) { throw GeolocateError.stateFileRefused(path: fullPath, reason: problem) }
                let fd = openat(descriptor, name, flags)
                if fd < 0 {
                    if errno == ENOENT { continue }
                    if errno == ELOOP {
                        throw GeolocateError.stateFileRefused(path: fullPath, reason: "it was replaced by a symbolic link while it was opened")
                    }
                    throw GeolocateError.stateNotWritable(path: fullPath, reason: ErrorText.posix(errno))
                }
                var info = stat()
                fstat(fd, &info)
                // What was opened must be what was judged, and still pass.
                if let problem = problem(info, also: also) ?? (info.st_ino == before.st_ino && info.st_dev == before.st_dev ? nil : "it was replaced while it was opened") {
                    close(fd)
                    throw GeolocateError.stateFileRefused(path: fullPath, reason: problem)
                }
                return OpenedFile(descriptor: fd, created: false)
            }
            guard errno == ENOENT else { throw GeolocateError.stateNotWritable(path: fullPath, reason: ErrorText.posix(errno)) }
            guard create else { return nil }
            let fd = openat(descriptor, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions)
            if fd < 0 {
                if errno == EEXIST { continue }
                throw GeolocateError.stateNotWritable(path: fullPath, reason: ErrorText.posix(errno))
            }
            adoptOwner(fd)
            fchmod(fd, permissions)
            return OpenedFile(descriptor: fd, created: true)
        }
        throw GeolocateError.stateNotWritable(path: fullPath, reason: "it kept changing while it was opened")
    }

    /// Gives `fd`, a file this process just created with `O_EXCL`, the directory's owner and
    /// group when this process is root and the directory another user's (the service user's
    /// `/var/lib/geolocate`): root's `geolocate flush` must not leave a root-owned lock or
    /// spool that the service then cannot open.
    private func adoptOwner(_ fd: Int32) {
        guard geteuid() == 0, owner != 0 else { return }
        _ = fchown(fd, owner, group)
    }

    // MARK: Reading and writing

    /// The contents of the file `name`, at most `limit` bytes; `nil` when there is none.
    /// - Throws: `GeolocateError.stateFileRefused` for a file that may not be ours;
    ///   `.stateUnreadable` when it cannot be read or is larger than `limit`.
    package func read(_ name: String, limit: Int) throws -> Data? {
        let opened: OpenedFile?
        do { opened = try openFile(name, .read) } catch let error as GeolocateError where error.isStateNotWritable {
            throw GeolocateError.stateUnreadable(path: error.path ?? path(of: name), reason: error.reason ?? error.description)
        }
        guard let opened else { return nil }
        defer { close(opened.descriptor) }
        switch BoundedFile.read(descriptor: opened.descriptor, limit: limit) {
        case .success(let data): return data
        case .failure(let failure): throw GeolocateError.stateUnreadable(path: path(of: name), reason: failure.text(limit: limit))
        }
    }

    /// Replaces the file `name` with `data` atomically: a new file of an unpredictable name
    /// (`.NAME.XXXXXX`) made with `O_EXCL`, written, synced, then renamed over `name`, so a
    /// link planted at `name` is replaced, never written through.
    /// - Parameter owner: the new file's user and group (an existing configuration's), else
    ///   the directory's when this process is root in another user's directory.
    /// - Throws: `POSIXError` when it cannot be written.
    package func writeAtomically(_ data: Data, to name: String, permissions: mode_t, owner: (uid: uid_t, gid: gid_t)? = nil) throws {
        let temporary = try writeTemporary(data, beside: name, permissions: permissions, owner: owner)
        guard renameat(descriptor, temporary, descriptor, name) == 0 else {
            let code = errno
            unlinkat(descriptor, temporary, 0)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }

    /// Writes `data` as the file `name` unless one is there: written aside, then linked into
    /// place, so two processes making it at once agree on one and none is ever replaced.
    /// `owner` is as `writeAtomically`'s.
    /// - Returns: whether this call made it.
    /// - Throws: `POSIXError` when it cannot be written.
    package func writeIfAbsent(_ data: Data, to name: String, permissions: mode_t, owner: (uid: uid_t, gid: gid_t)? = nil) throws -> Bool {
        let temporary = try writeTemporary(data, beside: name, permissions: permissions, owner: owner)
        defer { unlinkat(descriptor, temporary, 0) }
        guard linkat(descriptor, temporary, descriptor, name, 0) == 0 else {
            if errno == EEXIST { return false }
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        return true
    }

    /// Removes the entry `name` (a link is removed, never followed); a missing one is no error.
    package func remove(_ name: String) {
        unlinkat(descriptor, name, 0)
    }

    /// The names in this directory.
    package func names() -> [String] {
        let fd = openat(descriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let stream = fdopendir(fd) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// A new file `.NAME.XXXXXX` holding `data`, synced; returns its name.
    private func writeTemporary(_ data: Data, beside name: String, permissions: mode_t, owner: (uid: uid_t, gid: gid_t)?) throws -> String {
        var fd: Int32 = -1
        var temporary = ""
        for _ in 0..<100 {
            temporary = "." + name + "." + OpenDirectory.randomSuffix()
            fd = openat(descriptor, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 || errno != EEXIST { break }
        }
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        func fail(_ code: Int32) -> POSIXError {
            unlinkat(descriptor, temporary, 0)
            return POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        // Owner first: a change of owner clears the set-id bits the mode may carry.
        if let owner {
            if owner.uid != geteuid() || owner.gid != getegid(), fchown(fd, owner.uid, owner.gid) != 0 { throw fail(errno) }
        } else {
            adoptOwner(fd)
        }
        fchmod(fd, permissions)
        var offset = 0
        while offset < data.count {
            let written = data.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                throw fail(errno)
            }
            offset += written
        }
        guard fsync(fd) == 0 else { throw fail(errno) }
        return temporary
    }

    /// Six characters of `[A-Za-z0-9]`, as `mkstemp` would pick.
    private static func randomSuffix() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<6).map { _ in alphabet[Int(arc4random_uniform(UInt32(alphabet.count)))] })
    }
}

extension OpenDirectory {
    /// What the state directory holds that geolocate refuses, or `nil`: a planted file at any
    /// state file name, or (for root in another user's directory) a `gate/` that is not
    /// root's own. The gate asks before it decides, so a planted file is refused (its
    /// `policy.onError`) whichever step would have opened it first.
    package func stateRefusal() -> GeolocateError? {
        for name in StateFile.allNames.sorted() {
            if let problem = problem(with: name) { return GeolocateError.stateFileRefused(path: path(of: name), reason: problem) }
        }
        guard geteuid() == 0, owner != 0 else { return nil }
        do { _ = try privateSubdirectory(StateFile.gateDirectory) } catch let error as GeolocateError { return error } catch {}
        return nil
    }
}
