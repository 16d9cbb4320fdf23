import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where geolocate keeps its files: the configuration file and the state directory.
package enum Paths {
    /// The state directory in system mode (`isSystemMode`): the packaged units' `StateDirectory=`.
    package static let systemStateDirectory = "/var/lib/geolocate"
    /// The configuration file in system mode.
    package static let systemConfigFile = "/etc/geolocate/config.json"
    /// The device key in system mode: beside the config, in root's directory, so the service
    /// user it belongs to can read it but not move it, and no group member can read it (SPEC §16).
    package static let systemDeviceKeyFile = "/etc/geolocate/device-key"
    /// The directory a relative path in the system config is taken from, wherever the file was
    /// read (the units read a credential copy of it).
    package static let systemConfigDirectory = "/etc/geolocate"
    /// The system user the packaged units run as, who owns the system state and device key.
    package static let serviceUserName = "geolocate"
    /// `GEOLOCATE_SYSTEM=1`: what `--system` sets, in the environment every part reads.
    package static let systemModeVariable = "GEOLOCATE_SYSTEM"

    /// Whether geolocate runs as the system's: `--system` (`GEOLOCATE_SYSTEM=1`), or effective
    /// uid 0 with neither `GEOLOCATE_CONFIG` nor `XDG_CONFIG_HOME` set (SPEC §7, §16).
    ///
    /// Root under PAM, cron or an admin's shell then sees the files the services use, not a
    /// private, empty set under `/root`; the services and a monitor say `--system`.
    package static func isSystemMode(environment: [String: String], effectiveUID: uid_t = geteuid()) -> Bool {
        if environment[systemModeVariable] == "1" { return true }
        return effectiveUID == 0 && (environment["GEOLOCATE_CONFIG"] ?? "").isEmpty && (environment["XDG_CONFIG_HOME"] ?? "").isEmpty
    }

    /// Whether a reading command (`status`, `export`) should read the system's files by itself:
    /// the user has neither a configuration nor a state directory of their own and named
    /// none, while the system configuration exists (a monitoring user in the group geolocate).
    package static func readsSystemByDefault(environment: [String: String], effectiveUID: uid_t = geteuid()) -> Bool {
        guard !isSystemMode(environment: environment, effectiveUID: effectiveUID),
              (environment["GEOLOCATE_STATE_DIR"] ?? "").isEmpty, (environment["GEOLOCATE_CONFIG"] ?? "").isEmpty,
              access(systemConfigFile, F_OK) == 0 else { return false }
        let own = [configFile(flag: nil, environment: environment, effectiveUID: effectiveUID),
                   stateDirectory(environment: environment, effectiveUID: effectiveUID)]
        return own.allSatisfy { access($0, F_OK) != 0 }
    }

    /// Why this user may not run a command that writes or sends in system mode, or `nil`:
    /// only root and the service user may (SPEC §16), so no one else makes files there that
    /// the services then cannot replace.
    package static func systemWriterProblem(effectiveUID: uid_t = geteuid()) -> String? {
        if effectiveUID == 0 || effectiveUID == serviceUserID { return nil }
        return "--system writes the system's files (/etc/geolocate, /var/lib/geolocate): only root and the user \(serviceUserName) may; status, export, config show|get|path|validate and key show read them as any user"
    }

    /// The uid of the user geolocate, if the system has one.
    package static var serviceUserID: uid_t? {
        getpwnam(serviceUserName).map { $0.pointee.pw_uid }
    }

    /// `$GEOLOCATE_STATE_DIR` (which `--state-dir` sets), else in system mode
    /// `/var/lib/geolocate`, else `$XDG_STATE_HOME/geolocate`, else `~/.local/state/geolocate`.
    package static func stateDirectory(environment: [String: String], effectiveUID: uid_t = geteuid()) -> String {
        if let dir = environment["GEOLOCATE_STATE_DIR"], !dir.isEmpty { return dir }
        if isSystemMode(environment: environment, effectiveUID: effectiveUID) { return systemStateDirectory }
        if let xdg = environment["XDG_STATE_HOME"], !xdg.isEmpty { return xdg + "/geolocate" }
        return home(environment) + "/.local/state/geolocate"
    }

    /// `--config`, else `$GEOLOCATE_CONFIG`, else in system mode `/etc/geolocate/config.json`,
    /// else `$XDG_CONFIG_HOME/geolocate/config.json`, else `~/.config/geolocate/config.json`.
    package static func configFile(flag: String?, environment: [String: String], effectiveUID: uid_t = geteuid()) -> String {
        if let flag, !flag.isEmpty { return flag }
        if let file = environment["GEOLOCATE_CONFIG"], !file.isEmpty { return file }
        if isSystemMode(environment: environment, effectiveUID: effectiveUID) { return systemConfigFile }
        if let xdg = environment["XDG_CONFIG_HOME"], !xdg.isEmpty { return xdg + "/geolocate/config.json" }
        return home(environment) + "/.config/geolocate/config.json"
    }

    /// Makes an existing state directory private: locations are personal.
    ///
    /// A directory others may read or enter, or its group write, is open; one only its group
    /// may read (0750) is not. Only a directory that is plainly geolocate's own is tightened
    /// to 0700: ours, not sticky, and holding nothing but our files. A shared directory (`/tmp`, a sticky or a busy one
    /// someone pointed `GEOLOCATE_STATE_DIR` at) keeps its mode, because changing it would break
    /// whatever else lives there. Either way `warn` gets one line.
    package static func secureStateDirectory(_ path: String, warn: (String) -> Void) {
        var info = stat()
        // stat, not lstat: a state directory reached through a symlink is judged by what it is.
        // A group that may read but not write (the packaged 0750 /var/lib/geolocate, for a
        // monitoring user in the group geolocate) is a choice, not an exposure.
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_mode & 0o027 != 0 else { return }
        let mode = String(info.st_mode & 0o7777, radix: 8)
        let sticky = info.st_mode & S_ISVTX != 0
        let shared = sticky || !holdsOnlyStateFiles(path)
        if info.st_uid == geteuid(), !shared, chmod(path, 0o700) == 0 {
            warn("the state directory \(path) was open to other users (mode \(mode)); it is now 0700")
        } else {
            let why = info.st_uid != geteuid() ? "not ours to change"
                : sticky ? "a shared (sticky) directory, so left as it is" : "shared with other files, so left as it is"
            warn("the state directory \(path) is open to other users (mode \(mode)) and \(why); others may read or replace its locations (set GEOLOCATE_STATE_DIR to a private directory)")
        }
    }

    /// Whether every name in `path` is a `StateFile` or one of our temporary files
    /// (`.NAME.XXXXXX`).
    private static func holdsOnlyStateFiles(_ path: String) -> Bool {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return false }
        return names.allSatisfy { name in
            if StateFile.allNames.contains(name) || name == StateFile.gateDirectory { return true }
            guard name.hasPrefix("."), let dot = name.lastIndex(of: "."), dot != name.startIndex else { return false }
            return StateFile.allNames.contains(String(name[name.index(after: name.startIndex)..<dot]))
        }
    }

    /// Creates `path` and its missing parents, mode 0700.
    ///
    /// - Throws: `POSIXError` with the cause a user can act on: `ENOTDIR` when a part of the
    ///   path is a file (Foundation says "file exists" there), `EACCES`, `EROFS`…
    package static func makeDirectories(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            guard mkdir(prefix, 0o700) != 0 else { continue }
            let code = errno
            var info = stat()
            guard code == EEXIST, stat(prefix, &info) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO) }
            guard (info.st_mode & S_IFMT) == S_IFDIR else { throw POSIXError(.ENOTDIR) }
        }
    }

    private static func home(_ environment: [String: String]) -> String {
        environment["HOME"] ?? NSHomeDirectory()
    }
}

/// Writes a file atomically: a temporary file in the same directory, fsync, then rename.
///
/// The temporary file has an unpredictable name and is created with `O_CREAT | O_EXCL |
/// O_NOFOLLOW` relative to the directory's descriptor (`OpenDirectory.writeAtomically`), so a
/// symlink planted in the directory is never followed and never written through.
package enum AtomicFile {
    /// Writes `data` to `path` with `permissions`, and with `owner` (an existing file's user
    /// and group) when it is not ours; the directory is made if missing.
    package static func write(_ data: Data, to path: String, permissions: Int, owner: (uid: uid_t, gid: gid_t)? = nil) throws {
        guard let (directory, name) = try OpenDirectory.parent(of: path, create: true) else { throw POSIXError(.ENOENT) }
        try directory.writeAtomically(data, to: name, permissions: mode_t(permissions), owner: owner)
    }
}

extension AtomicFile {
    /// Replaces a file the user keeps (the configuration) atomically, as SPEC §7 asks: a
    /// symlink is written through (its target replaced, in the target's directory), and an
    /// existing file keeps its mode and owner; a new one gets `newFilePermissions`.
    ///
    /// `newFileGroup` is the group of a new file (the service's, for the system config).
    ///
    /// An admin who links the config into a managed directory, or opens it to 0644 for a PAM
    /// stack running as the user, must not find a private copy in its place after one `set`.
    package static func replace(_ data: Data, at path: String, newFilePermissions: Int, newFileGroup: gid_t? = nil) throws {
        let target = try linkTarget(of: path)
        var info = stat()
        if lstat(target, &info) == 0 {
            try write(data, to: target, permissions: Int(info.st_mode & 0o7777), owner: (info.st_uid, info.st_gid))
        } else {
            try write(data, to: target, permissions: newFilePermissions, owner: newFileGroup.map { (geteuid(), $0) })
        }
    }

    /// The file `path` finally names through any symlinks (the last one's target when it
    /// does not exist yet); `path` itself when it is no link.
    /// - Throws: `ELOOP` for a chain of more than 40 links.
    package static func linkTarget(of path: String) throws -> String {
        var current = path
        for _ in 0..<40 {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
            let count = readlink(current, &buffer, buffer.count)
            guard count > 0 else { return current }
            let destination = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            current = destination.hasPrefix("/") ? destination
                : URL(fileURLWithPath: current).deletingLastPathComponent().path + "/" + destination
        }
        throw POSIXError(.ELOOP)
    }
}

/// Reads small files that anyone may have put in place of ours (configuration, zones, state
/// files, sysfs values), never more than a limit: a file of gigabytes, or a FIFO, must not
/// stall or swell a command.
///
/// Only a regular file is read: it is opened without blocking and judged by `fstat` before a
/// byte is read, so a FIFO, device or directory in its place is refused at once, never waited on.
package enum BoundedFile {
    /// Why a file was not read.
    package enum Failure: Error, Equatable {
        /// No such file (`ENOENT`, or a part of the path that is a file, `ENOTDIR`).
        case missing
        /// Refused or failed, with `errno`.
        case unreadable(Int32)
        /// A FIFO, device, socket or directory (its kind, "a FIFO"): reading it could block
        /// or never end.
        case notRegular(String)
        case tooLarge
    }

    /// The contents of `path`, if it is a regular file of at most `limit` bytes.
    package static func read(_ path: String, limit: Int) -> Result<Data, Failure> {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return .failure(openFailure(errno)) }
        defer { close(fd) }
        return read(descriptor: fd, limit: limit)
    }

    /// The contents of the open file `fd`, if it is a regular file of at most `limit` bytes.
    package static func read(descriptor fd: Int32, limit: Int) -> Result<Data, Failure> {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(.unreadable(errno)) }
        if let kind = irregularKind(info) { return .failure(.notRegular(kind)) }
        if info.st_size > limit { return .failure(.tooLarge) }
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        // Read to the end rather than to st_size: /proc and sysfs files say 0 or 4096.
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, min($0.count, limit + 1 - data.count)) }
            if count > 0 {
                data.append(contentsOf: chunk[..<count])
                if data.count > limit { return .failure(.tooLarge) }
            } else if count == 0 || errno == EAGAIN {
                return .success(data)
            } else if errno != EINTR {
                return .failure(.unreadable(errno))
            }
        }
    }

    /// The contents of `path` when it is a readable regular file of at most `limit` bytes,
    /// else `nil`.
    package static func contents(_ path: String, limit: Int) -> Data? {
        try? read(path, limit: limit).get()
    }

    /// Why `path` cannot be handed to a library that opens it itself (libmosquitto's TLS
    /// files, SQLite's databases), or `nil` when it is a regular file of at most `limit` bytes.
    package static func problem(_ path: String, limit: Int) -> Failure? {
        var info = stat()
        guard stat(path, &info) == 0 else { return openFailure(errno) }
        if let kind = irregularKind(info) { return .notRegular(kind) }
        return info.st_size > limit ? .tooLarge : nil
    }

    /// The failure an `open` or `stat` that set `code` means.
    private static func openFailure(_ code: Int32) -> Failure {
        code == ENOENT || code == ENOTDIR ? .missing : .unreadable(code)
    }

    /// "a FIFO", "a directory"…, for anything but a regular file.
    private static func irregularKind(_ info: stat) -> String? {
        switch info.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFIFO: return "a FIFO"
        case S_IFDIR: return "a directory"
        case S_IFCHR, S_IFBLK: return "a device"
        case S_IFSOCK: return "a socket"
        default: return "a special file"
        }
    }
}

extension BoundedFile.Failure {
    /// The failure as the end of a sentence about the file: "is a FIFO, not a regular file".
    package func text(limit: Int) -> String {
        switch self {
        case .missing: return "does not exist"
        case .unreadable(let code): return "cannot be read: \(ErrorText.posix(code))"
        case .notRegular(let kind): return "is \(kind), not a regular file"
        case .tooLarge: return "is larger than \(BoundedFile.sizeText(limit))"
        }
    }
}

extension BoundedFile {
    /// `limit` in KiB or MiB, as messages say it.
    package static func sizeText(_ limit: Int) -> String {
        limit % (1024 * 1024) == 0 ? "\(limit / (1024 * 1024)) MiB" : "\(limit / 1024) KiB"
    }
}
