/// How a command ends: the one table of exit codes (SPEC §8, and the monitoring plugins'
/// numbers for `status --check`), which every error, the login gate's decision and status's
/// verdict is given as; the command line turns it into the process's exit in one place.
///
/// A struct, not an enum: `status --check`'s WARNING and UNKNOWN share their numbers with
/// other meanings (1, 3), and each name says which one a command means.
package struct ExitStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: Int32

    package init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// Done as asked; the login gate lets the login on.
    package static let success = ExitStatus(rawValue: 0)
    /// `config get` of a key with no value; the login gate refusing a login it cannot decide.
    package static let failure = ExitStatus(rawValue: 1)
    /// `--require-location` and the record has no location.
    package static let noLocation = ExitStatus(rawValue: 3)
    /// `--enforce` (or the login gate) and the policy did not allow.
    package static let denied = ExitStatus(rawValue: 4)
    /// Misuse of the command line, or a value that cannot be parsed (EX_USAGE).
    package static let usage = ExitStatus(rawValue: 64)
    /// Input that exists but cannot be read (EX_DATAERR).
    package static let dataError = ExitStatus(rawValue: 65)
    /// An input file that does not exist (EX_NOINPUT).
    package static let noInput = ExitStatus(rawValue: 66)
    /// A source that could not be reached where a location was required (EX_UNAVAILABLE).
    package static let unavailable = ExitStatus(rawValue: 69)
    /// A file geolocate must write that it cannot create (EX_CANTCREAT).
    package static let cannotCreate = ExitStatus(rawValue: 73)
    /// Standard output could not take what was printed (EX_IOERR).
    package static let ioError = ExitStatus(rawValue: 74)
    /// Try again: records still pending, a spool another process holds (EX_TEMPFAIL).
    package static let temporaryFailure = ExitStatus(rawValue: 75)
    /// The configuration, or a file it names, is wrong (EX_CONFIG).
    package static let configuration = ExitStatus(rawValue: 78)

    /// `status --check`: all is well (the monitoring plugins' OK).
    package static let checkOK = ExitStatus(rawValue: 0)
    /// `status --check`: WARNING.
    package static let checkWarning = ExitStatus(rawValue: 1)
    /// `status --check`: CRITICAL.
    package static let checkCritical = ExitStatus(rawValue: 2)
    /// `status --check`: UNKNOWN, also for its usage and configuration errors, as the
    /// plugins' guidelines ask.
    package static let checkUnknown = ExitStatus(rawValue: 3)

    package var description: String { "exit \(rawValue)" }
}
