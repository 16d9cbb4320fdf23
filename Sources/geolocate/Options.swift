import ArgumentParser
import Foundation
import GeolocateCore

/// `--config FILE`, shared by every command.
struct GlobalOptions: ParsableArguments {
    /// Overrides `$GEOLOCATE_CONFIG` and the XDG default.
    @Option(name: .long, help: ArgumentHelp("Configuration file to use.", valueName: "file"))
    var config: String?

    var configPath: String {
        Paths.configFile(flag: config, environment: ProcessInfo.processInfo.environment)
    }
}

/// Where locations come from: `--source`, `--replay` and `--replay-speed`.
struct SourceOptions: ParsableArguments {
    /// Parsed in `validate()` so a bad value is a usage error (exit 64).
    @Option(name: .long, help: ArgumentHelp(
        "Location source: gpsd, gpsd://HOST:PORT or nmea:FILE (default: $GEOLOCATE_SOURCE, config source, else gpsd).",
        valueName: "source"))
    var source: String?

    /// Shorthand for `--source nmea:FILE`; `-` reads standard input.
    @Option(name: .long, help: ArgumentHelp("Replay an NMEA-0183 log instead of asking gpsd (- for stdin).", valueName: "file"))
    var replay: String?

    @Option(name: .customLong("replay-speed"), help: ArgumentHelp(
        "Replay pacing: asap (default), realtime, or a factor from 0.001x to 1000000x, such as 10x. Timeouts always run on the log's time.",
        valueName: "speed"))
    var replaySpeed: String = "asap"

    func validate() throws {
        if source != nil && replay != nil {
            throw ValidationError("--source and --replay cannot be used together")
        }
        _ = try specifier()
        _ = try speed()
    }

    func specifier() throws -> SourceSpecifier? {
        if let replay { return .nmea(path: replay) }
        guard let source else { return nil }
        do { return try SourceSpecifier(parsing: source) } catch let error as GeolocateError {
            throw ValidationError(error.description)
        }
    }

    func speed() throws -> ReplaySpeed {
        do { return try ReplaySpeed(parsing: replaySpeed) } catch let error as GeolocateError {
            throw ValidationError(error.description)
        }
    }
}
