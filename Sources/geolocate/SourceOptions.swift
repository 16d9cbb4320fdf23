import ArgumentParser
import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery

/// Where locations come from: `--source`, `--replay` and `--replay-speed`.
struct SourceOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("gpsd (default), gpsd://HOST:PORT or nmea:FILE.", valueName: "source"),
            completion: .list(["gpsd", "gpsd://localhost:2947", "nmea:"]), transform: RefusedValue.checking("--source", parse: SourceSpecifier.init(parsing:)))
    var source: SourceSpecifier?

    /// Shorthand for `--source nmea:FILE`; `-` reads standard input.
    @Option(name: .long, help: ArgumentHelp("Replay an NMEA-0183 log (- for stdin).", valueName: "file"),
            completion: .file(extensions: ["nmea", "log", "txt"]))
    var replay: String?

    @Option(name: .customLong("replay-speed"), parsing: .unconditional, help: ArgumentHelp("asap (default), realtime, or a factor such as 10x.", valueName: "speed"),
            completion: .list(["asap", "realtime", "10x"]), transform: RefusedValue.checking("--replay-speed", parse: ReplaySpeed.init(parsing:)))
    var replaySpeed: ReplaySpeed = .asap

    func validate() throws {
        if source != nil && replay != nil {
            throw ValidationError("--source and --replay cannot be used together")
        }
    }

    /// The source the flags name, if any.
    var specifier: SourceSpecifier? { replay.map { .nmea(path: $0) } ?? source }
}
