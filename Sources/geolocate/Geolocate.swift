import ArgumentParser
import Foundation
import GeolocateCore
import Logging

@main
struct Geolocate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "geolocate",
        abstract: "Collect a device's location from gpsd or NMEA replay files and report it as JSON records.",
        discussion: """
            Reads gpsd (the default) or an NMEA-0183 log (--replay FILE), decides which \
            location to report for a risk event, and prints, spools or sends JSON records. \
            Durations need a unit (1500ms, 2s, 30m); numbers in records are JSON strings. \
            Fields, units, files and exit codes: man geolocate.

            Examples:
              geolocate config set permissions fine   # consent, once
              geolocate trigger login                 # one record, from gpsd
              geolocate trigger login --replay Examples/nmea/maynooth-drive.nmea
              geolocate track --interval 5m           # into the spool
              geolocate flush                         # deliver it
            """,
        version: Defaults.version,
        subcommands: [TriggerCommand.self, TrackCommand.self, FlushCommand.self, StatusCommand.self, ExportCommand.self, ConfigCommand.self]
    )

    /// Runs the command as the argument parser's own `main` does, except that a usage error
    /// is one line, as every other message of ours (SPEC §8): `geolocate: MESSAGE (see
    /// 'geolocate trigger --help')`, its control characters escaped (it may quote what the
    /// user typed), instead of the parser's `Error:`, `Help:` and `Usage:` lines.
    static func main() async {
        // A reader that went away is an error return of write (EPIPE), not death by SIGPIPE:
        // trigger must still spool or send the record it could not print.
        signal(SIGPIPE, SIG_IGN)
        let arguments = Geolocate.joiningNegativeValues(Array(CommandLine.arguments.dropFirst()))
        if let unknown = Geolocate.unknownSubcommand(arguments) {
            StandardError.write("geolocate: \(unknown)")
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            let full = fullMessage(for: error)
            guard code != .success, !full.isEmpty else { exit(withError: error) }
            let short = Geolocate.flagMessage(message(for: error))
            guard code == .validationFailure, !short.isEmpty else {
                StandardError.write(lines: full.replacingOccurrences(of: short, with: StandardError.oneLine(short)) + "\n")
                Foundation.exit(code.rawValue)
            }
            let help = full.range(of: "See '").flatMap { start in
                full[start.upperBound...].firstIndex(of: "'").map { " (see '\(full[start.upperBound..<$0])')" }
            } ?? ""
            StandardError.write("geolocate: \(short)\(help)")
            Foundation.exit(code.rawValue)
        }
    }
}

extension Geolocate {
    /// `--timeout -1` as `--timeout=-1`, and `config set KEY -1m` as `config set KEY -- -1m`:
    /// the parser takes a word starting with `-` for a flag and says "Missing value", where
    /// the value's own check says it is negative.
    static func joiningNegativeValues(_ arguments: [String]) -> [String] {
        func isNegativeNumber(_ word: String) -> Bool {
            guard word.hasPrefix("-"), let next = word.dropFirst().first else { return false }
            return next.isNumber || next == "."
        }
        var joined: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            if argument.hasPrefix("--"), !argument.contains("="), index + 1 < arguments.endIndex, isNegativeNumber(arguments[index + 1]) {
                joined.append("\(argument)=\(arguments[index + 1])")
                index += 2
                continue
            }
            // A negative positional value: after "--" when no option follows it.
            if isNegativeNumber(argument), !arguments.contains("--"), !arguments[index...].dropFirst().contains(where: { $0.hasPrefix("-") }) {
                joined.append("--")
            }
            joined.append(argument)
            index += 1
        }
        return joined
    }

    /// "unknown subcommand 'triger'; did you mean 'trigger'?" when a word where a subcommand
    /// belongs names none, instead of the parser's "2 unexpected arguments".
    static func unknownSubcommand(_ arguments: [String]) -> String? {
        var command: ParsableCommand.Type = Geolocate.self
        var path = "geolocate"
        for argument in arguments {
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty, !argument.hasPrefix("-"), argument != "help" else { return nil }
            let names = subcommands.map { $0.configuration.commandName ?? "" }
            guard let next = subcommands.first(where: { $0.configuration.commandName == argument }) else {
                return "unknown subcommand '\(argument)'\(Suggestion.didYouMean(argument, among: names)) (see '\(path) --help')"
            }
            command = next
            path += " \(argument)"
        }
        return nil
    }

    /// The parser's "The value 'X' is invalid for '--flag <value>': REASON" as "--flag: REASON":
    /// our reasons quote the value themselves, redacted where it holds a secret (`--post`).
    static func flagMessage(_ message: String) -> String {
        guard message.hasPrefix("The value '"), let forRange = message.range(of: "' is invalid for '"),
              let reasonStart = message.range(of: "': ", range: forRange.upperBound..<message.endIndex) else { return message }
        let flag = message[forRange.upperBound..<reasonStart.lowerBound].prefix { $0 != " " }
        let reason = message[reasonStart.upperBound...]
        return reason.hasPrefix(flag) ? String(reason) : "\(flag): \(reason)"
    }
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

/// `runReportingErrors` for commands that wait on the network: their tasks run on the
/// `WorkExecutor`, where a blocking spool or lock never stalls the cooperative pool.
func runReportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await withTaskExecutorPreference(WorkExecutor.shared) { try await body() }
    } catch let error as GeolocateError {
        StandardError.write("geolocate: \(error.description)")
        throw ExitCode(error.exitCode)
    }
}

/// Writes diagnostics to stderr, one line each, never to stdout.
enum StandardError {
    /// A line's sd-daemon(3) priority, which the journal files it under.
    enum Priority: Int {
        case critical = 2, error, warning, notice, info, debug
    }

    /// Whether stderr is the journal (`JOURNAL_STREAM`, SPEC §14): then each line starts with
    /// its priority (`<4>`), so `journalctl -p warning` finds the warnings.
    static let isJournal = JournalStream.isConnected(2, environment: ProcessInfo.processInfo.environment)

    /// Writes `line` as one line; a failure, by default, so its priority is error.
    static func write(_ line: String, priority: Priority = .error) {
        FileHandleOutput.stderr(prefix(priority) + oneLine(line) + "\n")
    }

    /// Writes `text` of one or more lines (a usage error and its synopsis), each with the
    /// journal's prefix when stderr is the journal.
    static func write(lines text: String, priority: Priority = .error) {
        guard isJournal else { return FileHandleOutput.stderr(text) }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let prefixed = lines.enumerated().map { index, line in
            index == lines.count - 1 && line.isEmpty ? "" : prefix(priority) + line + "\n"
        }
        FileHandleOutput.stderr(prefixed.joined())
    }

    /// `<N>` when stderr is the journal, else nothing.
    private static func prefix(_ priority: Priority) -> String {
        isJournal ? "<\(priority.rawValue)>" : ""
    }

    /// `text` with its control characters escaped (`\n`, `\r`, `\t`, `\u{1B}`): a path, URL or
    /// action name holding a newline or an escape sequence must not split a message into two
    /// lines, forge a second one, or drive the terminal.
    static func oneLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return text }
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.properties.generalCategory == .control:
                escaped += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}

/// swift-log handler printing `geolocate: LEVEL: message` lines on stderr, or, for
/// `trigger --pam` (whose stderr reaches the person logging in), writing them to the system log.
struct DiagnosticLogHandler: LogHandler {
    var logLevel: Logger.Level = .notice
    var metadata: Logger.Metadata = [:]
    var toSystemLog = false

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        if toSystemLog {
            SystemLog.write(event.level >= .error ? .error : .warning, "\(event.message)")
            return
        }
        let label = event.level == .notice ? "note" : event.level.rawValue
        StandardError.write("geolocate: \(label): \(event.message)", priority: DiagnosticLogHandler.priority(of: event.level))
    }

    /// The sd-daemon priority of a swift-log level (trace is debug, critical is crit).
    static func priority(of level: Logger.Level) -> StandardError.Priority {
        switch level {
        case .trace, .debug: return .debug
        case .info: return .info
        case .notice: return .notice
        case .warning: return .warning
        case .error: return .error
        case .critical: return .critical
        }
    }
}

enum DiagnosticLog {
    static func logger(verbose: Bool = false) -> Logger {
        var logger = Logger(label: "geolocate") { _ in DiagnosticLogHandler() }
        logger.logLevel = verbose ? .debug : .notice
        return logger
    }

    /// Warnings and errors to the system log (authpriv), nothing on stderr: `trigger --pam`.
    static func systemLogger() -> Logger {
        var logger = Logger(label: "geolocate") { _ in DiagnosticLogHandler(toSystemLog: true) }
        logger.logLevel = .warning
        return logger
    }
}
