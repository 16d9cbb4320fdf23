import CSQLiteNoFollow
import GeolocateModel
import struct GRDB.DatabaseError

/// Where SQLite opens a database of the state directory: a `file:` URI through the VFS that
/// refuses a symbolic link anywhere in the path (`CSQLiteNoFollow`), in the directory as the
/// kernel names it.
///
/// geolocate judges the database file through the directory's descriptor (`OpenDirectory`),
/// but SQLite opens it again by path, resolving links as it goes: a link the directory's
/// owner swapped in between would have made root create or write a database anywhere
/// (SPEC §14). Through this VFS such a link fails the open; and the directory's own path,
/// taken from its descriptor (`/proc/self/fd`), holds no link of its own to refuse.
package enum NoFollowDatabase {
    /// The URI of the database `name` in `directory`, with `query` parameters (`mode=ro`).
    package static func uri(_ name: String, in directory: OpenDirectory, query: [String] = []) -> String {
        let registered = geolocate_register_nofollow_vfs() == 0
        // Without the VFS (it cannot fail on a SQLite that has the unix VFS) the URI names none,
        // and SQLite's own refusal of a link as the file's last part still holds.
        let parameters = (registered ? ["vfs=" + String(cString: geolocate_nofollow_vfs_name)] : []) + query
        return "file:" + escaped(directory.resolvedPath(of: name)) + (parameters.isEmpty ? "" : "?" + parameters.joined(separator: "&"))
    }

    /// Whether SQLite refused to open a database because a link was in its path
    /// (`SQLITE_CANTOPEN_SYMLINK`): one swapped in after geolocate judged the file.
    package static func refusedALink(_ error: DatabaseError) -> Bool {
        error.extendedResultCode.rawValue == 14 | (6 << 8)
    }

    /// The refusal, in geolocate's words, of the database `path` that SQLite found a link in.
    package static func refusal(of path: String) -> GeolocateError {
        .stateFileRefused(path: path, reason: "it was replaced by a symbolic link while it was opened")
    }

    /// `path` with `%`, `?` and `#` escaped for a `file:` URI.
    private static func escaped(_ path: String) -> String {
        var escaped = ""
        for character in path {
            switch character {
            case "%": escaped += "%25"
            case "?": escaped += "%3f"
            case "#": escaped += "%23"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
