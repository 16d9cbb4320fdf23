import ArgumentParser
import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Show and change the configuration file.",
        discussion: """
            The file is --config, else $GEOLOCATE_CONFIG, else ~/.config/geolocate/config.json, \
            written atomically with mode 0600. Durations need a unit (1500ms, 2s, 30m, 6h, \
            10d); a bare number is refused, except by triggerActionQueryTimeout (milliseconds). \
            'geolocate config keys' lists every key with its values and default.

            Examples:
              geolocate config set permissions fine
              geolocate config set actions.checkout.mode last-known:5m
              geolocate config get spool.maxRetention
            """,
        subcommands: [Show.self, Get.self, Set.self, Unset.self, Keys.self, PathCommand.self, Validate.self, Reset.self]
    )

    /// Shell completion of a key: every key of the settings table, with the endpoint and
    /// action names of the configuration in force (a file that does not load gives the table).
    static let keys = CompletionKind.custom { words, _, _ in
        ConfigKey.completions(in: try? ConfigStore(path: GlobalOptions.configPath(completing: words)).load())
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "Print the configuration file as JSON, secrets redacted.")
        @Flag(name: .customLong("show-secrets"), help: "Print header values and URL credentials as they are.")
        var showSecrets = false
        @Flag(name: .long, help: "Also print every key the file does not set, with its built-in value.")
        var all = false
        @OptionGroup var globalOptions: GlobalOptions

        func run() throws {
            try runReportingErrors {
                let store = globalOptions.configStore
                let document = all ? try store.effective() : try store.load()
                try FileHandleOutput.stdout((showSecrets ? document : ConfigStore.redacted(document)).prettyPrinted() + "\n")
            }
        }
    }

    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "keys", abstract: "List every key: its values, built-in default and meaning.")
        @Flag(name: .long, help: "Print the list as a Markdown table.")
        var markdown = false

        func run() throws {
            try runReportingErrors { try FileHandleOutput.stdout((markdown ? ConfigKey.markdownTable : ConfigKey.summary) + "\n") }
        }
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "get",
            abstract: "Print one value (the file's, else the built-in default).",
            discussion: "Strings print as they are, lists and objects as JSON, secrets redacted as by show. Exit 1 when the key has no value.")
        @Argument(help: "Dotted key, such as actions.checkout.mode.", completion: ConfigCommand.keys) var key: String
        @Flag(name: .customLong("show-secrets"), help: "Print header values and URL credentials as they are.")
        var showSecrets = false
        @OptionGroup var globalOptions: GlobalOptions

        func run() throws {
            try runReportingErrors {
                try FileHandleOutput.stdout(try globalOptions.configStore.printed(key, showingSecrets: showSecrets) + "\n")
            }
        }
    }

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Validate and store one value.",
            // One value, though the parser holds it as the words no option took (`words`).
            usage: "geolocate config set <key> <value> [--config <file>] [--state-dir <dir>] [--system]",
            discussion: "A list value is a comma list (fine,coarse) or a JSON array; none or an empty string is the empty list.")
        @Argument(help: "Dotted key, such as permissions or actions.checkout.mode.", completion: ConfigCommand.keys)
        var key: String
        /// The value, whatever it starts with: `-1m` is a value its key's check refuses as
        /// negative. The parser reads a single argument that starts with `-` as options, so
        /// the value is what no option took (`.allUnrecognized`), one word.
        @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The value, with a unit for a duration (30s, 6h).", valueName: "value"),
                  completion: .custom { words, index, _ in index > 0 && index <= words.count ? ConfigKey.choices(forKey: words[index - 1]) : [] })
        var words: [String] = []
        @OptionGroup var globalOptions: GlobalOptions

        /// The words given for the value, without the `--` that may come before it.
        var values: [String] {
            guard let terminator = words.firstIndex(of: "--") else { return words }
            var values = words
            values.remove(at: terminator)
            return values
        }

        func validate() throws {
            guard !values.isEmpty else { throw ValidationError("Missing expected argument '<value>'") }
            let extra = values.dropFirst()
            if let option = extra.first(where: { $0.hasPrefix("-") }) {
                throw ValidationError("Unknown option '\(option)'" + Suggestion.didYouMean(option, among: ["--config", "--state-dir", "--system"]))
            }
            if !extra.isEmpty {
                throw ValidationError("\(extra.count) unexpected argument\(extra.count == 1 ? "" : "s"): " + extra.map { "'\($0)'" }.joined(separator: ", "))
            }
        }

        func run() throws {
            try runReportingErrors {
                try globalOptions.configStore.set(key, to: values[0])
            }
        }
    }

    struct Unset: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "unset", abstract: "Remove one value, so the built-in default applies.")
        @Argument(help: "Dotted key.", completion: ConfigCommand.keys) var key: String
        @OptionGroup var globalOptions: GlobalOptions

        func run() throws {
            try runReportingErrors { try globalOptions.configStore.unset(key) }
        }
    }

    struct PathCommand: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "path", abstract: "Print the configuration file's path.")
        @OptionGroup var globalOptions: GlobalOptions

        func run() throws { try runReportingErrors { try FileHandleOutput.stdout(globalOptions.configPath + "\n") } }
    }

    struct Validate: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "validate", abstract: "Check the configuration file; exit 78 with the line and reason when it is invalid.")
        @OptionGroup var globalOptions: GlobalOptions

        func run() throws {
            try runReportingErrors {
                let line = try globalOptions.configStore.validate(clock: globalOptions.clock, elapsed: globalOptions.elapsed,
                                                                  logger: DiagnosticLog.logger())
                try FileHandleOutput.stdout(line + "\n")
            }
        }
    }

    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "reset", abstract: "Start from an empty configuration, keeping the old file as FILE.bak.")
        @OptionGroup var globalOptions: GlobalOptions

        func run() throws {
            try runReportingErrors {
                if let backup = try globalOptions.configStore.reset() {
                    StandardError.write("geolocate: the previous configuration was kept as \(backup)", priority: .notice)
                }
            }
        }
    }
}
