/// Every failure a command can end with, each carrying what the user needs to read.
///
/// A struct over a private code, as async-http-client's `HTTPClientError`: a failure is made
/// with the static function named for it, compared with `==`, and asked for what a caller
/// needs (`exitStatus`, `description`, `path`, `reason`, `isSpoolLocked`…); no caller
/// switches over the codes, so one added breaks none. `exitStatus` gives each its place in
/// `ExitStatus`, the one table of exit codes; `description` is the one line for stderr.
package struct GeolocateError: Error, Equatable, CustomStringConvertible {
    private enum Code: Equatable {
        case usage(String)
        case unreadableInput(reason: String)
        case inputMissing(path: String)
        case sourceUnavailable(String)
        case configuration(file: String, line: Int?, reason: String, advice: String?)
        case permissionDenied(path: String, writing: Bool, uid: UInt32)
        case stateNotWritable(path: String, reason: String)
        case stateFileRefused(path: String, reason: String)
        case stateUnreadable(path: String, reason: String)
        case spoolDamaged(path: String, reason: String)
        case spoolChanged(path: String)
        case spoolLocked(path: String)
        case uncommitted(path: String, count: Int)
        case locationRequired(reason: String)
        case permissionRequired(String)
        case missingSetting(String)
        case endpointRefused(String)
        case outputFailed(reason: String)
        case fileNotWritable(path: String, reason: String)
        case outputIsStateFile(path: String, stateFile: String)
        case outputIsProtected(path: String, what: String)
        case policyDenied(PolicyResult)
        case valueNotSet(key: String)
    }

    private let code: Code

    private init(_ code: Code) {
        self.code = code
    }

    /// Misuse of the command line or a value that cannot be parsed (exit 64).
    package static func usage(_ message: String) -> GeolocateError { GeolocateError(.usage(message)) }

    /// Input that exists but cannot be read (exit 65).
    package static func unreadableInput(reason: String) -> GeolocateError { GeolocateError(.unreadableInput(reason: reason)) }

    /// An input file that does not exist (exit 66).
    package static func inputMissing(path: String) -> GeolocateError { GeolocateError(.inputMissing(path: path)) }

    /// A source that could not be reached where a location was required (exit 69).
    package static func sourceUnavailable(_ message: String) -> GeolocateError { GeolocateError(.sourceUnavailable(message)) }

    /// A configuration file that is corrupt or invalid, or a value `config set` refuses (exit 78).
    /// `advice` replaces "fix the file, or move it away to start over" where that is wrong (a
    /// file that does not exist).
    package static func configuration(file: String, line: Int?, reason: String, advice: String? = nil) -> GeolocateError {
        GeolocateError(.configuration(file: file, line: line, reason: reason, advice: advice))
    }

    /// A configuration or zones file the system does not let this user read, or the
    /// configuration not write (exit 78): its permissions are what to fix, not its contents,
    /// so the advice names the user (`uid`) and never says to move the file away.
    package static func permissionDenied(path: String, writing: Bool, uid: UInt32) -> GeolocateError { GeolocateError(.permissionDenied(path: path, writing: writing, uid: uid)) }

    /// A state file (last known location) that cannot be written (exit 73, EX_CANTCREAT).
    package static func stateNotWritable(path: String, reason: String) -> GeolocateError { GeolocateError(.stateNotWritable(path: path, reason: reason)) }

    /// Something in the state directory where geolocate expects a file of its own (a symbolic
    /// link, a FIFO or device, a file with other hard links, another user's file): refused,
    /// never followed nor changed (exit 73, SPEC §14).
    package static func stateFileRefused(path: String, reason: String) -> GeolocateError { GeolocateError(.stateFileRefused(path: path, reason: reason)) }

    /// A state file that exists but cannot be read: permissions, a FIFO in its place, a spool
    /// of a newer geolocate (exit 65).
    package static func stateUnreadable(path: String, reason: String) -> GeolocateError { GeolocateError(.stateUnreadable(path: path, reason: reason)) }

    /// The spool is not a SQLite database, or SQLite finds it malformed (exit 65).
    package static func spoolDamaged(path: String, reason: String) -> GeolocateError { GeolocateError(.spoolDamaged(path: path, reason: reason)) }

    /// A read-only read of the spool saw a writer change it twice over; reading again sees
    /// the new state (exit 75).
    package static func spoolChanged(path: String) -> GeolocateError { GeolocateError(.spoolChanged(path: path)) }

    /// Another process held the spool's write lock past the busy timeout; nothing was
    /// written and the same write can be tried again (exit 75, EX_TEMPFAIL).
    package static func spoolLocked(path: String) -> GeolocateError { GeolocateError(.spoolLocked(path: path)) }

    /// A run ended with records it made but could not commit: another process kept the spool
    /// locked (exit 73).
    package static func uncommitted(path: String, count: Int) -> GeolocateError { GeolocateError(.uncommitted(path: path, count: count)) }

    /// `--require-location` and the record has no location (exit 3).
    package static func locationRequired(reason: String) -> GeolocateError { GeolocateError(.locationRequired(reason: reason)) }

    /// A command that collects nothing without a location permission (exit 78).
    package static func permissionRequired(_ message: String) -> GeolocateError { GeolocateError(.permissionRequired(message)) }

    /// A setting a command needs is missing, such as an endpoint for flush (exit 78).
    package static func missingSetting(_ message: String) -> GeolocateError { GeolocateError(.missingSetting(message)) }

    /// An endpoint answered that it, or its credentials, are wrong (exit 78).
    package static func endpointRefused(_ message: String) -> GeolocateError { GeolocateError(.endpointRefused(message)) }

    /// Standard output could not take what the command printed: a full disk, an I/O error
    /// (exit 74, EX_IOERR).
    package static func outputFailed(reason: String) -> GeolocateError { GeolocateError(.outputFailed(reason: reason)) }

    /// A file the user asked for (`export --output`) cannot be written: 73.
    package static func fileNotWritable(path: String, reason: String) -> GeolocateError { GeolocateError(.fileNotWritable(path: path, reason: reason)) }

    /// `export --output` names the spool or another file of the state directory, which the
    /// export would replace: a usage error (exit 64), refused before anything is written.
    package static func outputIsStateFile(path: String, stateFile: String) -> GeolocateError { GeolocateError(.outputIsStateFile(path: path, stateFile: stateFile)) }

    /// `export --output` names a file the export reads or needs (64): `what` says which, such
    /// as "the configuration file".
    package static func outputIsProtected(path: String, what: String) -> GeolocateError { GeolocateError(.outputIsProtected(path: path, what: what)) }

    /// `--enforce` and the location policy did not allow (exit 4); the record is still printed.
    package static func policyDenied(_ result: PolicyResult) -> GeolocateError { GeolocateError(.policyDenied(result)) }

    /// `config get` of a key the file does not set and that has no built-in value (exit 1).
    package static func valueNotSet(key: String) -> GeolocateError { GeolocateError(.valueNotSet(key: key)) }

    /// The file the failure is about, when it names one.
    package var path: String? {
        switch code {
        case .inputMissing(let path), .stateNotWritable(let path, _), .stateFileRefused(let path, _), .stateUnreadable(let path, _),
             .spoolDamaged(let path, _), .spoolChanged(let path), .spoolLocked(let path), .uncommitted(let path, _),
             .fileNotWritable(let path, _), .outputIsStateFile(let path, _), .outputIsProtected(let path, _),
             .permissionDenied(let path, _, _):
            return path
        case .configuration(let file, _, _, _):
            return file
        default:
            return nil
        }
    }

    /// Why, as the failure carries it apart from its path, when it does.
    package var reason: String? {
        switch code {
        case .unreadableInput(let reason), .stateNotWritable(_, let reason), .stateFileRefused(_, let reason),
             .stateUnreadable(_, let reason), .spoolDamaged(_, let reason), .configuration(_, _, let reason, _),
             .locationRequired(let reason), .outputFailed(let reason), .fileNotWritable(_, let reason):
            return reason
        default:
            return nil
        }
    }

    /// Whether a state file could not be written (`stateNotWritable`), which some callers
    /// carry on after, saying so.
    package var isStateNotWritable: Bool {
        if case .stateNotWritable = code { return true }
        return false
    }

    /// Whether another process held the spool's lock (`spoolLocked`): the same write can be
    /// tried again.
    package var isSpoolLocked: Bool {
        if case .spoolLocked = code { return true }
        return false
    }

    /// Whether the spool is not a database SQLite can read (`spoolDamaged`).
    package var isSpoolDamaged: Bool {
        if case .spoolDamaged = code { return true }
        return false
    }

    /// Whether this is `stateFileRefused`: a file planted in the state directory, which ends
    /// what a missing or unwritable file would only be said for.
    package var isRefusedStateFile: Bool {
        if case .stateFileRefused = code { return true }
        return false
    }

    package var exitStatus: ExitStatus {
        switch code {
        case .usage, .outputIsStateFile, .outputIsProtected: return .usage
        case .unreadableInput, .stateUnreadable, .spoolDamaged: return .dataError
        case .inputMissing: return .noInput
        case .sourceUnavailable: return .unavailable
        case .stateNotWritable, .stateFileRefused, .uncommitted, .fileNotWritable: return .cannotCreate
        case .spoolLocked, .spoolChanged: return .temporaryFailure
        case .configuration, .permissionDenied, .permissionRequired, .missingSetting, .endpointRefused: return .configuration
        case .locationRequired: return .noLocation
        case .outputFailed: return .ioError
        case .policyDenied: return .denied
        case .valueNotSet: return .failure
        }
    }

    package var description: String {
        switch code {
        case .usage(let message):
            return message
        case .unreadableInput(let reason):
            return "cannot read input: \(reason)"
        case .inputMissing(let path):
            return "input file not found: \(path) (check the path)"
        case .sourceUnavailable(let message):
            return message
        case .configuration(let file, let line, let reason, let advice):
            let place = line.map { "\(file):\($0)" } ?? file
            return "\(place): \(reason) (\(advice ?? "fix the file, or move it away to start over"))"
        case .permissionDenied(let path, let writing, let uid):
            return writing
                ? "cannot write \(path): permission denied (make it and its directory writable by UID \(uid), the user running geolocate)"
                : "cannot read \(path): permission denied (make it readable by UID \(uid), the user running geolocate)"
        case .stateNotWritable(let path, let reason):
            return "cannot write state file \(path): \(reason) (check --state-dir or GEOLOCATE_STATE_DIR)"
        case .stateFileRefused(let path, let reason):
            return "refusing \(path): \(reason); geolocate never follows a link or uses another user's file where it keeps its own (remove it)"
        case .stateUnreadable(let path, let reason):
            return "cannot read state file \(path): \(reason)"
        case .spoolDamaged(let path, let reason):
            return "the spool \(path) is damaged: \(reason) (its records cannot be read; move it away to start a new one)"
        case .spoolChanged(let path):
            return "\(path) changed while it was read; try again"
        case .spoolLocked(let path):
            return "\(path) is locked by another process; nothing was written, try again when it is free"
        case .uncommitted(let path, let count):
            return "\(count) record\(count == 1 ? "" : "s") could not be committed: another process kept \(path) locked"
        case .locationRequired(let reason):
            return "no location: \(reason)"
        case .permissionRequired(let message), .missingSetting(let message), .endpointRefused(let message):
            return message
        case .outputFailed(let reason):
            return "cannot write to standard output: \(reason)"
        case .fileNotWritable(let path, let reason):
            return "cannot write \(path): \(reason)"
        case .outputIsProtected(let path, let what):
            return "--output \(path) is \(what), and export never replaces it; write the export elsewhere"
        case .outputIsStateFile(let path, let stateFile):
            let what = path == stateFile ? "" : " (\(stateFile))"
            return "--output \(path)\(what) is in geolocate's state directory, with the spool, and export never replaces it; write the export elsewhere"
        case .policyDenied(let result):
            return "policy: \(result.decision.rawValue): \(result.reason) (--enforce)"
        case .valueNotSet(let key):
            return "\(key) is not set and has no built-in value"
        }
    }
}
