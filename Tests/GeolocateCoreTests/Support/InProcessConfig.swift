import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateModel
import Logging

/// `geolocate config …` in this process: each subcommand as the command line runs it (the
/// one `ConfigStore` call, its output and its `GeolocateError` as one stderr line and exit
/// status), on a configuration file in a directory of its own (or `InProcessTrigger`'s, which
/// runs it). The command line adds only the parsing, which `ConfigEndToEndTests` keeps
/// testing through the binary.
struct InProcessConfig {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    let home: URL
    let configPath: String

    init(home: URL = FileManager.default.temporaryDirectory.appendingPathComponent("config-\(UUID().uuidString)"), configPath: String? = nil) {
        self.home = home
        self.configPath = configPath ?? home.appendingPathComponent("config.json").path
        try? FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
    }

    /// Runs `arguments` (`["config", "set", KEY, VALUE]`, with `--config FILE` and
    /// `--show-secrets`/`--all` where the subcommand takes them; a relative `--config` is from
    /// the project root, where the integration tests run the binary).
    func run(_ arguments: [String]) -> Result {
        var words = arguments
        var path = configPath
        if let index = words.firstIndex(of: "--config"), index + 1 < words.count {
            path = InProcessTrigger.fromProjectRoot(words[index + 1])
            words.removeSubrange(index...index + 1)
        }
        let flags = Set(words.filter { $0.hasPrefix("--") })
        words.removeAll { $0.hasPrefix("--") }
        precondition(words.first == "config", "only config commands run in process: \(arguments)")
        let store = ConfigStore(path: path)
        var notes = ""
        // `config validate` logs as the command line does (`DiagnosticLog.logger()`).
        let lines = InProcessTrigger.Lines()
        let logger = Logger(label: "test") { _ in lines }
        do {
            switch words.dropFirst().first {
            case "set": try store.set(words[2], to: words[3]); return Result(status: 0, stdout: "", stderr: "")
            case "unset": try store.unset(words[2]); return Result(status: 0, stdout: "", stderr: "")
            case "get":
                return Result(status: 0, stdout: try store.printed(words[2], showingSecrets: flags.contains("--show-secrets")) + "\n", stderr: "")
            case "show":
                let document = flags.contains("--all") ? try store.effective() : try store.load()
                let shown = flags.contains("--show-secrets") ? document : ConfigStore.redacted(document)
                return Result(status: 0, stdout: shown.prettyPrinted() + "\n", stderr: "")
            case "validate":
                let line = try store.validate(clock: SystemClock(), elapsed: SystemMonotonicClock(), logger: logger)
                return Result(status: 0, stdout: line + "\n", stderr: lines.text)
            case "reset":
                if let backup = try store.reset() { notes = "geolocate: the previous configuration was kept as \(backup)\n" }
                return Result(status: 0, stdout: "", stderr: notes)
            case "keys":
                return Result(status: 0, stdout: (flags.contains("--markdown") ? ConfigKey.markdownTable : ConfigKey.summary) + "\n", stderr: "")
            case "path":
                return Result(status: 0, stdout: path + "\n", stderr: "")
            default:
                preconditionFailure("no such config subcommand: \(arguments)")
            }
        } catch let error as GeolocateError {
            return Result(status: error.exitStatus.rawValue, stdout: "", stderr: lines.text + "geolocate: \(ErrorText.oneLine(error.description))\n")
        } catch {
            return Result(status: -1, stdout: "", stderr: "not a GeolocateError: \(error)\n")
        }
    }
}
