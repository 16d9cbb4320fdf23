/// Every failure a command can end with, each carrying what the user needs to read.
///
/// `exitStatus` gives each case its place in `ExitStatus`, the one table of exit codes;
/// `description` is the one line for stderr.
package enum GeolocateError: Error, Equatable, CustomStringConvertible {
    /// Misuse of the command line or a value that cannot be parsed (exit 64).
    case usage(String)
    /// Input that exists but cannot be read (exit 65).
    case unreadableInput(reason: String)
    /// An input file that does not exist (exit 66).
    case inputMissing(path: String)
    /// A source that could not be reached where a location was required (exit 69).
    case sourceUnavailable(String)
    /// A configuration file that is corrupt or invalid, or a value `config set` refuses (exit 78).
    case configuration(file: String, line: Int?, reason: String)
    /// A configuration or zones file the system does not let this user read, or the
    /// configuration not write (exit 78): its permissions are what to fix, not its contents,
    /// so the advice names the user (`uid`) and never says to move the file away.
    case permissionDenied(path: String, writing: Bool, uid: UInt32)
    /// A state file (last known location) that cannot be written (exit 73, EX_CANTCREAT).
    case stateNotWritable(path: String, reason: String)
    /// Something in the state directory where geolocate expects a file of its own (a symbolic
    /// link, a FIFO or device, a file with other hard links, another user's file): refused,
    /// never followed nor changed (exit 73, SPEC §14).
    case stateFileRefused(path: String, reason: String)
    /// A state file that exists but cannot be read: permissions, a FIFO in its place, a spool
    /// of a newer geolocate (exit 65).
    case stateUnreadable(path: String, reason: String)
    /// The spool is not a SQLite database, or SQLite finds it malformed (exit 65).
    case spoolDamaged(path: String, reason: String)
    /// A read-only read of the spool saw a writer change it twice over; reading again sees
    /// the new state (exit 75).
    case spoolChanged(path: String)
    /// Another process held the spool's write lock past the busy timeout; nothing was
    /// written and the same write can be tried again (exit 75, EX_TEMPFAIL).
    case spoolLocked(path: String)
    /// A run ended with records it made but could not commit: another process kept the spool
    /// locked (exit 73).
    case uncommitted(path: String, count: Int)
    /// `--require-location` and the record has no location (exit 3).
    case locationRequired(reason: String)
    /// A command that collects nothing without a location permission (exit 78).
    case permissionRequired(String)
    /// A setting a command needs is missing, such as an endpoint for flush (exit 78).
    case missingSetting(String)
    /// An endpoint answered that it, or its credentials, are wrong (exit 78).
    case endpointRefused(String)
    /// Standard output could not take what the command printed: a full disk, an I/O error
    /// (exit 74, EX_IOERR).
    case outputFailed(reason: String)
    /// A file the user asked for (`export --output`) cannot be written: 73.
    case fileNotWritable(path: String, reason: String)
    /// `export --output` names the spool or another file of the state directory, which the
    /// export would replace: a usage error (exit 64), refused before anything is written.
    case outputIsStateFile(path: String, stateFile: String)
    /// `export --output` names a file the export reads or needs (64): `what` says which, such
    /// as "the configuration file".
    case outputIsProtected(path: String, what: String)
    /// `--enforce` and the location policy did not allow (exit 4); the record is still printed.
    case policyDenied(PolicyResult)
    /// `config get` of a key the file does not set and that has no built-in value (exit 1).
    case valueNotSet(key: String)

    /// Whether this is `stateFileRefused`: a file planted in the state directory, which ends
    /// what a missing or unwritable file would only be said for.
    package var isRefusedStateFile: Bool {
        if case .stateFileRefused = self { return true }
        return false
    }

    package var exitStatus: ExitStatus {
        switch self {
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
        switch self {
        case .usage(let message):
            return message
        case .unreadableInput(let reason):
            return "cannot read input: \(reason)"
        case .inputMissing(let path):
            return "input file not found: \(path) (check the path of the replay)"
        case .sourceUnavailable(let message):
            return message
        case .configuration(let file, let line, let reason):
            let place = line.map { "\(file):\($0)" } ?? file
            return "\(place): \(reason) (fix the file, or move it away to start over)"
        case .permissionDenied(let path, let writing, let uid):
            return writing
                ? "cannot write \(path): permission denied (make it and its directory writable by UID \(uid), the user running geolocate)"
                : "cannot read \(path): permission denied (make it readable by UID \(uid), the user running geolocate)"
        case .stateNotWritable(let path, let reason):
            return "cannot write state file \(path): \(reason) (check GEOLOCATE_STATE_DIR)"
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
