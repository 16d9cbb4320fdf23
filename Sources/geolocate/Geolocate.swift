import ArgumentParser
import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
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
        subcommands: [TriggerCommand.self, TrackCommand.self, FlushCommand.self, StatusCommand.self, ExportCommand.self, ConfigCommand.self, KeyCommand.self, StateCommand.self]
    )

    /// Runs the command as the argument parser's own `main` does, except that a usage error
    /// is one line, as every other message of ours (SPEC §8): `geolocate: MESSAGE (see
    /// 'geolocate trigger --help')`, its control characters escaped (it may quote what the
    /// user typed), instead of the parser's `Error:`, `Help:` and `Usage:` lines.
    static func main() async {
        // A reader that went away is an error return of write (EPIPE), not death by SIGPIPE:
        // trigger must still spool or send the record it could not print.
        signal(SIGPIPE, SIG_IGN)
        // Swift repairs invalid UTF-8 in arguments with U+FFFD: a nonce, an audience or a path
        // would silently become another one.
        for index in 1..<Int(CommandLine.argc) where CommandLine.unsafeArgv[index].map({ String(validatingCString: $0) == nil }) ?? false {
            StandardError.write("geolocate: argument \(index) is not valid UTF-8 text; nothing was done")
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        let arguments = Geolocate.joiningNegativeValues(Array(CommandLine.arguments.dropFirst()))
        let command: ParsableCommand.Type
        switch Geolocate.command(named: arguments) {
        case .found(let found): command = found
        case .unknown(let message):
            StandardError.write("geolocate: \(message)")
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        do {
            var parsed = try parseAsRoot(arguments)
            if !Geolocate.onlyReads(parsed), let options = globalOptions(of: parsed) {
                try runReportingErrors { try options.checkSystemWriter() }
            }
            if var asyncCommand = parsed as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try parsed.run()
            }
        } catch let end as CommandEnd {
            CommandEnd.exit(end.status)
        } catch {
            let code = exitCode(for: error)
            let full = fullMessage(for: error)
            guard code != .success, !full.isEmpty else { exit(withError: error) }
            // The login gate's own arguments are the administrator's pam.d line: a mistake
            // there is decided by policy.onError, silently, with its syslog line (SPEC §14).
            if command == TriggerCommand.self, arguments.contains("--pam") {
                let line = StandardError.oneLine(message(for: error))
                CommandEnd.exit(LoginGate.refusingLine(line, arguments: arguments, callers: ProcessInfo.processInfo.environment).exitStatus)
            }
            // A monitoring plugin's usage error is UNKNOWN (3), said in its one line on stdout.
            if command == StatusCommand.self, arguments.contains("--check"), code == .validationFailure {
                try? FileHandleOutput.stdout(StatusReport.unknownLine(usageMessage(for: error, in: command), stateDirectory: nil) + "\n")
                CommandEnd.exit(.checkUnknown)
            }
            let sentence = code == .validationFailure ? usageMessage(for: error, in: command) : ""
            guard !sentence.isEmpty else {
                let short = message(for: error)
                StandardError.write(lines: full.replacingOccurrences(of: short, with: StandardError.oneLine(short)) + "\n")
                Foundation.exit(code.rawValue)
            }
            StandardError.write("geolocate: \(sentence) (see '\(commandPath(command)) --help')")
            Foundation.exit(code.rawValue)
        }
    }
}

extension Geolocate {
    /// Whether `command` only reads, so that any user may say `--system` to it (SPEC §16):
    /// status, export, and the config and key commands that show (`config keys` reads no file).
    static func onlyReads(_ command: ParsableCommand) -> Bool {
        command is StatusCommand || command is ExportCommand || command is ConfigCommand.Show || command is ConfigCommand.Get
            || command is ConfigCommand.PathCommand || command is ConfigCommand.Validate
            || command is KeyCommand.Show
    }

    /// The `--config`, `--state-dir` and `--system` a parsed command was given.
    static func globalOptions(of command: ParsableCommand) -> GlobalOptions? {
        Mirror(reflecting: command).children.lazy.compactMap { ($0.value as? OptionGroup<GlobalOptions>)?.wrappedValue }.first
    }

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
            // Everything after "--" is a positional value, as the user said.
            if argument == "--" {
                joined += arguments[index...]
                break
            }
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

    /// The command the arguments name, or why they name none.
    enum CommandLookup {
        case found(ParsableCommand.Type)
        /// "unknown subcommand 'triger'; did you mean 'trigger'? (see 'geolocate --help')"
        case unknown(String)
    }

    /// The command the leading words of `arguments` name (`config set` for `config set KEY
    /// VALUE`), from the parser's own command tree; an unknown word where a subcommand belongs
    /// is said as such, instead of the parser's "2 unexpected arguments".
    static func command(named arguments: [String]) -> CommandLookup {
        var command: ParsableCommand.Type = Geolocate.self
        for argument in arguments {
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty, !argument.hasPrefix("-"), argument != "help" else { break }
            let names = subcommands.map { $0.configuration.commandName ?? "" }
            guard let next = subcommands.first(where: { $0.configuration.commandName == argument }) else {
                return .unknown("unknown subcommand '\(argument)'\(Suggestion.didYouMean(argument, among: names)) (see '\(commandPath(command)) --help')")
            }
            command = next
        }
        return .found(command)
    }

    /// `geolocate config set` for `ConfigCommand.Set`: the names from the root down.
    static func commandPath(_ command: ParsableCommand.Type) -> String {
        var names: [String] = []
        var type: ParsableCommand.Type? = command
        while let current = type {
            names.insert(current.configuration.commandName ?? "", at: 0)
            type = Geolocate.parent(of: current)
        }
        return names.joined(separator: " ")
    }

    /// The command whose subcommands include `command`, nil for the root.
    private static func parent(of command: ParsableCommand.Type, under root: ParsableCommand.Type = Geolocate.self) -> ParsableCommand.Type? {
        for sub in root.configuration.subcommands {
            if ObjectIdentifier(sub) == ObjectIdentifier(command) { return root }
            if let found = parent(of: command, under: sub) { return found }
        }
        return nil
    }

    /// The one sentence of a usage error: for a flag's value that was refused, ours (see
    /// `RefusedValue`); for any other, the parser's own (an unknown option and its suggestion,
    /// a missing value) or the `ValidationError` our `validate()` threw.
    static func usageMessage(for error: any Error, in command: ParsableCommand.Type) -> String {
        guard let refused = RefusedValue(error) else { return message(for: error) }
        // "--format: " unless the sentence names its flag already ("--timeout 5ms is under
        // 10ms"); every positional argument is a string, which the parser never refuses.
        func naming(_ text: String) -> String {
            guard let flag = refused.flag, !text.hasPrefix(flag) else { return text }
            return "\(flag): \(text)"
        }
        guard let reason = refused.reason else {
            let values = RefusedValue.allValues(of: refused.flag, in: command)
            guard !values.isEmpty else { return naming("'\(refused.value)' is not a value it takes") }
            return naming("'\(refused.value)' is not one of \(values.joined(separator: ", "))"
                          + Suggestion.didYouMean(refused.value, among: values))
        }
        // Our reasons quote the value themselves, redacted where it holds a secret (`--post`).
        return naming((reason as? LocalizedError)?.errorDescription ?? String(describing: reason))
    }
}

/// A value the argument parser refused for a flag or argument: the flag as its synopsis
/// writes it (`--format`), the value typed, and the error our parsing function threw, if any
/// (none for a value outside an enumeration's cases).
///
/// swift-argument-parser keeps its errors internal (`CommandError`, `ParserError` in 1.8.2)
/// and words them in English we would otherwise have to take apart; the values it stores are
/// read here by reflection instead, so a change of its wording cannot reach our messages.
/// Package.swift pins its version exactly; should a new version store them differently, this
/// is nil, the parser's own sentence is printed, and UsageErrorEndToEndTests fail on that bump.
struct RefusedValue {
    var flag: String?
    var value: String
    var reason: (any Error)?

    /// The refused value in `error`, nil for every other error.
    init?(_ error: any Error) {
        // A `CommandError` holds the `ParserError` beside the command stack.
        let wrapped = Mirror(reflecting: error).children.first { $0.label == "parserError" }?.value ?? error
        // `unableToParseValue(InputOrigin, Name?, String, forKey: InputKey, originalError: Error?)`
        guard let failure = Mirror(reflecting: wrapped).children.first, failure.label == "unableToParseValue" else { return nil }
        let fields = Array(Mirror(reflecting: failure.value).children)
        guard fields.count == 5, let value = fields[2].value as? String else { return nil }
        self.value = value
        reason = fields[4].value as? any Error
        flag = Mirror(reflecting: fields[1].value).children.first.flatMap { RefusedValue.synopsis(of: $0.value) }
    }

    /// `--name`, `-n` or `-name` for the parser's `Name` (`.long`, `.short`, `.longWithSingleDash`).
    private static func synopsis(of name: Any) -> String? {
        guard let (label, value) = Mirror(reflecting: name).children.first.map({ ($0.label, $0.value) }) else { return nil }
        switch label {
        case "long": return (value as? String).map { "--\($0)" }
        case "longWithSingleDash": return (value as? String).map { "-\($0)" }
        case "short":
            // `.short(Character, allowingJoined: Bool)`
            return (Mirror(reflecting: value).children.first?.value as? Character).map { "-\($0)" }
        default: return nil
        }
    }

    /// The values `flag` of `command` takes, from the parser's description of the command
    /// (its `ToolInfoV0` JSON, as `--experimental-dump-help` prints it: `command.arguments`,
    /// each with `names` and `allValues`); empty if it lists none.
    static func allValues(of flag: String?, in command: ParsableCommand.Type) -> [String] {
        guard let flag,
              let info = try? JSONSerialization.jsonObject(with: Data(command._dumpHelp().utf8)) as? [String: Any],
              let arguments = (info["command"] as? [String: Any])?["arguments"] as? [[String: Any]] else { return [] }
        let argument = arguments.first { argument in
            (argument["names"] as? [[String: Any]] ?? []).contains { name in
                guard let kind = name["kind"] as? String, let text = name["name"] as? String else { return false }
                return (kind == "long" ? "--" : "-") + text == flag
            }
        }
        return argument?["allValues"] as? [String] ?? []
    }
}

/// Runs a core call, turning a `GeolocateError` into one line on stderr and its exit status.
func runReportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as GeolocateError {
        throw CommandEnd.reporting(error)
    }
}

/// `runReportingErrors` for commands that wait on the network: their tasks run on the
/// `WorkExecutor`, where a blocking spool or lock never stalls the cooperative pool.
func runReportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await withTaskExecutorPreference(WorkExecutor.shared) { try await body() }
    } catch let error as GeolocateError {
        throw CommandEnd.reporting(error)
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
        ErrorText.oneLine(text)
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
