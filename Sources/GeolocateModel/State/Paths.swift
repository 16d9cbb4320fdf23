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
