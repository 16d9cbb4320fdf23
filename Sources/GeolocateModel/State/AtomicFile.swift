import Foundation

#if canImport(Glibc)
import Glibc
#endif

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

    /// Writes `value` as JSON with sorted keys to `path`, 0600: a state file only geolocate
    /// reads back (the last known fix, the brokers that refused MQTT 5).
    /// - Throws: `GeolocateError.stateNotWritable` (73).
    package static func writeState<Value: Encodable>(_ value: Value, to path: String) throws {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            try write(try encoder.encode(value), to: path, permissions: 0o600)
        } catch {
            throw GeolocateError.stateNotWritable(path: path, reason: ErrorText.plain(error))
        }
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
