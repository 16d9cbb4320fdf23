import ArgumentParser
import GeolocateCore
import Logging

@main
struct Geolocate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "geolocate",
        abstract: "Collect a device's location from gpsd or NMEA replay files and report it as JSON records.",
        discussion: """
            Exit codes: 0 success, 3 --require-location and no location, 64 usage error, \
            65 unreadable data, 66 input file missing, 69 source unavailable or not yet implemented, \
            75 temporary failure, 78 configuration error.
            """,
        version: GeolocateVersion.current,
        subcommands: [TriggerCommand.self, TrackCommand.self, FlushCommand.self, ConfigCommand.self]
    )
}

enum GeolocateVersion {
    static let current = "0.1.0"
}

/// Runs a core call, turning a `GeolocateError` into one line on stderr and its exit code.
func runReportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as GeolocateError {
        StandardError.write("geolocate: \(error.description)")
        throw ExitCode(error.exitCode)
    }
}

/// Writes diagnostics to stderr, one line each, never to stdout.
enum StandardError {
    static func write(_ line: String) {
        FileHandleOutput.stderr(line + "\n")
    }
}

/// swift-log handler printing `geolocate: LEVEL: message` lines on stderr.
struct StderrLogHandler: LogHandler {
    var logLevel: Logger.Level = .notice
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?,
             source: String, file: String, function: String, line: UInt) {
        let label = level == .notice ? "hint" : level.rawValue
        StandardError.write("geolocate: \(label): \(message)")
    }
}

enum Logging {
    static func logger(verbose: Bool = false) -> Logger {
        var logger = Logger(label: "geolocate") { _ in StderrLogHandler() }
        logger.logLevel = verbose ? .debug : .notice
        return logger
    }
}
