import GeolocateModel
import Logging

/// Where and when a command works, made once by the command line and handed to the core whole:
/// the settings and the file they came from, the state directory, the environment, the clocks
/// and the logger.
///
/// The one way paths and clocks reach the core: nothing below the command line looks up the
/// state directory or reads a clock of its own, so a test gives the core a directory and a
/// manual clock and is sure every part uses them.
package struct CommandContext: Sendable {
    package var settings: Settings
    /// The configuration file `settings` came from, named in messages about them.
    package var configPath: String
    /// The state directory: the spool, the last known location, the device key's default place.
    package var stateDirectory: String
    /// The process's environment as the command sees it (`--state-dir` and `--system` in it).
    package var environment: [String: String]
    /// "Now" for records, spool times and tokens.
    package var clock: WallClock
    /// Every wait and deadline.
    package var elapsed: MonotonicClock
    package var logger: Logger
    /// The TPM a device key inside one signs in (`nil`: such a key cannot sign here).
    package var tpm: (any TPMAccess)?

    /// A context whose state directory is the one `environment` names (`GEOLOCATE_STATE_DIR`,
    /// system mode, else XDG's).
    package init(settings: Settings, configPath: String, environment: [String: String],
                 stateDirectory: String? = nil, clock: WallClock, elapsed: MonotonicClock, logger: Logger, tpm: (any TPMAccess)? = nil) {
        self.settings = settings
        self.configPath = configPath
        self.environment = environment
        self.stateDirectory = stateDirectory ?? Paths.stateDirectory(environment: environment)
        self.clock = clock
        self.elapsed = elapsed
        self.logger = logger
        self.tpm = tpm
    }
}
