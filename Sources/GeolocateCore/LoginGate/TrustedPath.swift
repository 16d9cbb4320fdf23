import Foundation
import GeolocateDelivery
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

/// Whether a file the hook relies on could have been written by someone other than root
/// (SPEC §14): a configuration, zones file or state directory any user could change would let
/// that user decide who logs in.
package enum TrustedPath {
    /// Why `path` cannot be trusted, or `nil` when it, and every directory above it, is owned
    /// by root (or one of `owners`) and writable by no one else.
    ///
    /// A sticky directory owned by root (`/tmp`) is trusted as a parent: others may not
    /// rename or remove what they do not own there. Both the path as written and the file it
    /// finally names (through symlinks) are checked, since whoever may change a link chooses
    /// its target.
    package static func problem(_ path: String, owners: Set<uid_t> = []) -> String? {
        let trusted = owners.union([0])
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var paths = [absolute]
        if let real = realpath(absolute, nil) {
            paths.append(String(cString: real))
            free(real)
        }
        for candidate in paths {
            var prefix = ""
            let parts = candidate.split(separator: "/").map(String.init)
            var chain = ["/"]
            for part in parts {
                prefix += "/" + part
                chain.append(prefix)
            }
            for (index, entry) in chain.enumerated() {
                var info = stat()
                guard lstat(entry, &info) == 0 else {
                    // A file that does not exist yet (a state file) is judged by its directory.
                    if index == chain.count - 1, errno == ENOENT { break }
                    return "\(entry) cannot be checked: \(ErrorText.posix(errno))"
                }
                let isLink = info.st_mode & S_IFMT == S_IFLNK
                let isDirectory = info.st_mode & S_IFMT == S_IFDIR
                if !trusted.contains(info.st_uid) {
                    return "\(entry) belongs to uid \(info.st_uid), not root"
                }
                if isLink { continue }
                let groupWritable = info.st_mode & S_IWGRP != 0 && info.st_gid != 0
                let otherWritable = info.st_mode & S_IWOTH != 0
                let stickyRootDirectory = isDirectory && info.st_mode & S_ISVTX != 0 && info.st_uid == 0 && index < chain.count - 1
                if (groupWritable || otherWritable) && !stickyRootDirectory {
                    return "\(entry) is writable by \(otherWritable ? "every user" : "group \(info.st_gid)") (mode \(String(info.st_mode & 0o7777, radix: 8)))"
                }
            }
        }
        return nil
    }

    /// The uid of the system user `name` (such as `geolocate` or `gpsd`), if there is one.
    package static func uid(ofUser name: String) -> uid_t? {
        guard let entry = getpwnam(name) else { return nil }
        return entry.pointee.pw_uid
    }
}
