import ArgumentParser
import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import Logging
import TPM

/// `--config FILE`, `--state-dir DIR` and `--system`, shared by every command.
struct GlobalOptions: ParsableArguments {
    /// Overrides `$GEOLOCATE_CONFIG` and the defaults (system mode's, or XDG's).
    @Option(name: .long, help: ArgumentHelp("Configuration file to use.", valueName: "file"), completion: .file(extensions: ["json"]))
    var config: String?

    /// Overrides `$GEOLOCATE_STATE_DIR` and the defaults (system mode's, or XDG's).
    @Option(name: .customLong("state-dir"), help: ArgumentHelp("State directory to use (spool, last known location).", valueName: "dir"),
            completion: .directory)
    var stateDir: String?

    /// The system's configuration, state and device key, as the packaged units use them.
    @Flag(name: .long, help: "System mode: /etc/geolocate, /var/lib/geolocate.")
    var system = false

    /// The configuration file in force.
    var configPath: String { Paths.configFile(flag: config, environment: environment) }

    /// The configuration in force. In system mode, unless `--config` names a file, a
    /// relative path in it is from `/etc/geolocate`, even in the units' credential copy, so
    /// it means one file to every role (SPEC §16).
    var configStore: ConfigStore {
        let systemFile = config == nil && Paths.isSystemMode(environment: environment)
        return ConfigStore(path: configPath, relativeTo: systemFile ? Paths.systemConfigDirectory : nil)
    }

    /// The configuration file in force with `flag` as `--config`.
    static func configPath(flag: String?) -> String {
        Paths.configFile(flag: flag, environment: ProcessInfo.processInfo.environment)
    }

    /// The configuration file in force for a command line being completed: its `--config`
    /// (`--config FILE` or `--config=FILE`, which bash splits into three words), else as
    /// without the flag.
    static func configPath(completing words: [String]) -> String {
        var flag: String?
        for (index, word) in words.enumerated() {
            if word.hasPrefix("--config=") {
                flag = String(word.dropFirst("--config=".count))
            } else if word == "--config", index + 1 < words.count {
                flag = index + 2 < words.count && words[index + 1] == "=" ? words[index + 2] : words[index + 1]
            }
        }
        return configPath(flag: flag)
    }

    /// The environment the command works in: the process's, with `--state-dir` in
    /// `GEOLOCATE_STATE_DIR` and `--system` in `GEOLOCATE_SYSTEM`, where every part of
    /// geolocate looks for them.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        if let stateDir, !stateDir.isEmpty { environment["GEOLOCATE_STATE_DIR"] = stateDir }
        if system { environment[Paths.systemModeVariable] = "1" }
        return environment
    }

    /// These options for a command that only reads (`status`, `export`): system mode by
    /// itself for a user with no files of their own while the system's exist (SPEC §16).
    var forReading: GlobalOptions {
        var options = self
        if !system && config == nil && Paths.readsSystemByDefault(environment: environment) { options.system = true }
        return options
    }

    /// Refuses `--system` (or `GEOLOCATE_SYSTEM=1`) to a command that writes or sends, unless
    /// run by root or the service user.
    func checkSystemWriter() throws {
        guard environment[Paths.systemModeVariable] == "1", let problem = Paths.systemWriterProblem() else { return }
        throw GeolocateError.usage(problem)
    }

    /// The context the core works in: the configuration in force, read now (a `GeolocateError`
    /// when it cannot be) unless `readingConfig` is false (the built-in settings: for work
    /// on the state directory alone, which a broken configuration must not stop), the state
    /// directory, the clocks and `logger` (else stderr's, with diagnostics when `verbose`).
    func context(verbose: Bool = false, logger: Logger? = nil, readingConfig: Bool = true) throws -> CommandContext {
        let store = configStore
        return CommandContext(settings: readingConfig ? try store.settings() : Settings(), configPath: store.path, environment: environment,
                              clock: clock, elapsed: elapsed, logger: logger ?? DiagnosticLog.logger(verbose: verbose), tpm: TSS2TPM(elapsed: elapsed))
    }

    /// The command's wall clock: the system's. The core takes it as a parameter everywhere
    /// (no default below the command line), so tests give it theirs.
    var clock: WallClock { SystemClock() }

    /// The command's monotonic clock, for every wait and deadline.
    var elapsed: MonotonicClock { SystemMonotonicClock() }

    func validate() throws {
        if stateDir == "" { throw ValidationError("--state-dir needs a directory") }
        if config == "" { throw ValidationError("--config needs a file") }
    }
}
