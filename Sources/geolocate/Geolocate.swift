import ArgumentParser
import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel

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
        let arguments = Array(CommandLine.arguments.dropFirst())
        // The login gate's own arguments are the administrator's pam.d line: a mistake there
        // (help or the version asked, which would exit 0 and let the login through) is decided
        // by policy.onError, silently, with its syslog line (SPEC §14).
        let isGate = arguments.first == "trigger" && arguments.contains("--pam")
        func refuseGateLine(_ reason: String) -> Never {
            CommandEnd.exit(LoginGate.refusingLine(StandardError.oneLine(reason), arguments: arguments,
                                                   callers: ProcessInfo.processInfo.environment).exitStatus)
        }
        // Swift repairs invalid UTF-8 in arguments with U+FFFD: a nonce, an audience or a path
        // would silently become another one.
        for index in 1..<Int(CommandLine.argc) where CommandLine.unsafeArgv[index].map({ String(validatingCString: $0) == nil }) ?? false {
            if isGate { refuseGateLine("argument \(index) is not valid UTF-8 text") }
            StandardError.write("geolocate: argument \(index) is not valid UTF-8 text; nothing was done")
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
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
            if isGate { refuseGateLine(code == .success ? "--help or --version, which decide nothing" : message(for: error)) }
            guard code != .success, !full.isEmpty else { exit(withError: error) }
            // A monitoring plugin's usage error is UNKNOWN (3), said in its one line on stdout.
            if command == StatusCommand.self, arguments.contains("--check"), code == .validationFailure {
                try? FileHandleOutput.stdout(StatusReport.unknownLine(usageMessage(for: error, arguments: arguments), stateDirectory: nil) + "\n")
                CommandEnd.exit(.checkUnknown)
            }
            let sentence = code == .validationFailure ? usageMessage(for: error, arguments: arguments) : ""
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
        (command as? TakesGlobalOptions)?.globalOptions
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

    /// The one sentence of a usage error: for a value our parsing refused, ours (see
    /// `RefusedValue`); for any other, the parser's own (an unknown option and its suggestion,
    /// a missing value) or the `ValidationError` our `validate()` threw.
    static func usageMessage(for error: any Error, arguments: [String]) -> String {
        if let refused = RefusedValue.recorded { return refused.sentence(in: arguments) }
        return message(for: error)
    }
}

/// A command that takes `--config`, `--state-dir` and `--system`.
protocol TakesGlobalOptions {
    var globalOptions: GlobalOptions { get }
}

extension TriggerCommand: TakesGlobalOptions {}
extension TrackCommand: TakesGlobalOptions {}
extension FlushCommand: TakesGlobalOptions {}
extension StatusCommand: TakesGlobalOptions {}
extension ExportCommand: TakesGlobalOptions {}
extension ConfigCommand.Show: TakesGlobalOptions {}
extension ConfigCommand.Get: TakesGlobalOptions {}
extension ConfigCommand.Set: TakesGlobalOptions {}
extension ConfigCommand.Unset: TakesGlobalOptions {}
extension ConfigCommand.PathCommand: TakesGlobalOptions {}
extension ConfigCommand.Validate: TakesGlobalOptions {}
extension ConfigCommand.Reset: TakesGlobalOptions {}
extension KeyCommand.Init: TakesGlobalOptions {}
extension KeyCommand.Show: TakesGlobalOptions {}
extension KeyCommand.Rotate: TakesGlobalOptions {}
extension StateCommand.Forget: TakesGlobalOptions {}
