import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `geolocate trigger ACTION …` in this process: `Trigger.respond`, the call the command
/// makes, on a replay, with a configuration file and a state directory of its own; what it
/// prints, logs and ends with. The same home also runs `config …` (`InProcessConfig`, on the
/// same file), `state forget previous` and `track` (`Tracker.command`), so a test can chain
/// them as a shell would chain the binary's runs. It reads the few flags these tests give;
/// the command line's parsing of them is what the integration tests keep testing through
/// the binary.
struct InProcessTrigger {
    struct Result: CustomStringConvertible {
        var status: Int32
        var stdout: String
        var stderr: String

        func json() throws -> [String: Any] {
            guard let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any] else {
                throw Failure(message: "not one JSON object: \(stdout)")
            }
            return object
        }

        var description: String { "status \(status), stdout \(stdout), stderr \(stderr)" }
    }

    struct Failure: Error {
        var message: String
    }

    /// Log lines as the command line writes them: `geolocate: note: …`, each one line
    /// (`StandardError.write` escapes control characters).
    final class Lines: LogHandler, @unchecked Sendable {
        private let lines = Mutex<[String]>([])
        var logLevel: Logger.Level = .notice
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let label = event.level == .notice ? "note" : event.level.rawValue
            lines.withLock { $0.append(ErrorText.oneLine("geolocate: \(label): \(event.message)")) }
        }
        var text: String { lines.withLock { $0.map { $0 + "\n" }.joined() } }
    }

    /// What `track --stdout` printed, shared with its writer.
    final class Printed: Sendable {
        let bytes = Mutex([UInt8]())
        var text: String { String(decoding: bytes.withLock { $0 }, as: UTF8.self) }
    }

    let home: URL
    /// The commands' monotonic clock: the system's, or one a test moves (waits then take no time).
    var elapsed: MonotonicClock = SystemMonotonicClock()
    var configPath: String { home.appendingPathComponent("config.json").path }
    var stateDirectory: String { home.appendingPathComponent("state").path }

    init(home: URL = FileManager.default.temporaryDirectory.appendingPathComponent("trigger-\(UUID().uuidString)")) {
        self.home = home
        try? FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
    }

    /// The environment the binary gets from `GeolocateProcess`: this home's configuration and
    /// state directory, and a device without battery, Wi-Fi or modem (no command is run to
    /// ask), with `extra` over it.
    func environment(_ extra: [String: String]) -> [String: String] {
        var environment = ["GEOLOCATE_CONFIG": configPath, "GEOLOCATE_STATE_DIR": stateDirectory,
                           "GEOLOCATE_DEVICE_ROOT": home.appendingPathComponent("no-device").path]
        environment.merge(extra) { $1 }
        return environment
    }

    /// An example log, as the integration tests name it (from the project root).
    static func example(_ name: String) -> String { "Examples/nmea/\(name)" }

    /// A fixture of this target, as the integration tests name it (from the project root).
    static func fixture(_ name: String) -> String { "Tests/GeolocateCoreTests/Fixtures/\(name)" }

    /// `path` as the binary run from the project root reads it.
    static func fromProjectRoot(_ path: String) -> String {
        path.hasPrefix("/") ? path : TestPaths.projectRoot.appendingPathComponent(path).path
    }

    /// Runs `["trigger", ACTION, flags…]`, `["track", flags…]`, `["config", …]` or
    /// `["state", "forget", "previous"]`; a relative `--replay` or `--config` is from the
    /// project root, where the integration tests run the binary.
    func run(_ arguments: [String], environment extra: [String: String] = [:]) async -> Result {
        switch arguments.first {
        case "config":
            let result = InProcessConfig(home: home, configPath: configPath).run(arguments)
            return Result(status: result.status, stdout: result.stdout, stderr: result.stderr)
        case "state":
            return forget(arguments, environment: environment(extra))
        case "track":
            return await track(arguments, environment: environment(extra))
        default:
            return await trigger(arguments, environment: environment(extra))
        }
    }

    /// The context `GlobalOptions.context` makes: the configuration in force (`--config`, else
    /// this home's), read now, the state directory the environment names, logging to `lines`.
    private func context(config: String?, environment: [String: String], lines: Lines, readingConfig: Bool = true) throws -> CommandContext {
        let path = config.map(Self.fromProjectRoot) ?? configPath
        let logger = Logger(label: "test") { _ in lines }
        return CommandContext(settings: readingConfig ? try ConfigStore(path: path).settings() : Settings(), configPath: path,
                              environment: environment, clock: SystemClock(), elapsed: elapsed, logger: logger)
    }

    /// The flags of `arguments` from `index`, each handed to `take` with a function giving its value.
    private static func parse(_ arguments: [String], from index: Int,
                              _ take: (_ flag: String, _ value: () throws -> String) throws -> Bool) throws {
        var index = index
        while index < arguments.count {
            let flag = arguments[index]
            func value() throws -> String {
                index += 1
                guard index < arguments.count else { throw Failure(message: "no value for \(flag)") }
                return arguments[index]
            }
            guard try take(flag, value) else { throw Failure(message: "a flag these tests do not give: \(flag)") }
            index += 1
        }
    }

    /// `trigger`: `TriggerCommand.request` and `.output` from the flags, then `Trigger.respond`.
    private func trigger(_ arguments: [String], environment: [String: String]) async -> Result {
        let lines = Lines()
        let printed = Mutex("")
        do {
            guard arguments.count >= 2, arguments[0] == "trigger" else { throw Failure(message: "not a trigger: \(arguments)") }
            var request = TriggerRequest(action: arguments[1])
            var output = TriggerOutput()
            var config: String?
            var policy = false
            try Self.parse(arguments, from: 2) { flag, value in
                switch flag {
                case "--replay": request.source = .nmea(path: Self.fromProjectRoot(try value()))
                case "--source": request.source = try SourceSpecifier(parsing: try value())
                case "--permission": request.permission = Permission(rawValue: try value()).map { [$0] } ?? []
                case "--mode": request.mode = try CollectionMode(parsing: try value())
                case "--timeout": request.timeoutMilliseconds = try DurationText.milliseconds(try value(), bareUnit: .refused)
                case "--now": request.now = try TimeText.milliseconds(try value())
                case "--format":
                    let name = try value()
                    guard let format = TriggerFormat(name: name) else { throw Failure(message: "no format \(name)") }
                    output.format = format
                case "--endpoint": output.endpoint = try value()
                case "--config": config = try value()
                case "--require-location": output.requireLocation = true
                case "--policy": policy = true
                case "--enforce": output.enforce = true
                default: return false
                }
                return true
            }
            // --enforce implies --policy (TriggerCommand.request).
            request.policy = policy || output.enforce
            let context = try context(config: config, environment: environment, lines: lines)
            try await Trigger(context).respond(to: request, output: output, mqtt: nil) { line in printed.withLock { $0 += line + "\n" } }
            return Result(status: 0, stdout: printed.withLock { $0 }, stderr: lines.text)
        } catch let error as GeolocateError {
            // The record is printed before the error that ends the command (3, 4).
            return Result(status: error.exitStatus.rawValue, stdout: printed.withLock { $0 },
                          stderr: lines.text + ErrorText.oneLine("geolocate: \(error.description)") + "\n")
        } catch {
            return Result(status: -1, stdout: "", stderr: "\(error)\n")
        }
    }

    /// `track`: `TrackCommand`'s request and flags, then `Tracker.command` on replays, its
    /// lines collected as `--stdout` prints them.
    private func track(_ arguments: [String], environment: [String: String]) async -> Result {
        let lines = Lines()
        let printed = Printed()
        do {
            var flags = TrackFlags()
            var request = TrackRequest(toStdout: false, toSpool: true)
            var config: String?
            try Self.parse(arguments, from: 1) { flag, value in
                switch flag {
                case "--replay": request.source = .nmea(path: Self.fromProjectRoot(try value()))
                case "--permission": request.permission = Permission(rawValue: try value()).map { [$0] } ?? []
                case "--every-fix": flags.everyFix = true
                case "--count": flags.count = Int(try value())
                case "--interval": flags.interval = try DurationText.milliseconds(try value(), bareUnit: .refused)
                case "--stdout": request.toStdout = true
                case "--no-spool": request.toSpool = false
                case "--format":
                    let name = try value()
                    guard let format = RecordFormat(rawValue: name) else { throw Failure(message: "no format \(name)") }
                    request.format = format
                case "--config": config = try value()
                default: return false
                }
                return true
            }
            let context = try context(config: config, environment: environment, lines: lines)
            try await Tracker.command(context, flags: flags, request: request, stop: StopFlag(), openSource: SourceOpener.replaysOnly.open,
                                      mqtt: { nil }, write: { bytes in printed.bytes.withLock { $0 += bytes }; return nil })
            return Result(status: 0, stdout: printed.text, stderr: lines.text)
        } catch let error as GeolocateError {
            return Result(status: error.exitStatus.rawValue, stdout: printed.text,
                          stderr: lines.text + ErrorText.oneLine("geolocate: \(error.description)") + "\n")
        } catch {
            return Result(status: -1, stdout: "", stderr: "\(error)\n")
        }
    }

    /// `state forget previous`: `StateCommand.Forget`, on the state directory alone.
    private func forget(_ arguments: [String], environment: [String: String]) -> Result {
        guard arguments == ["state", "forget", "previous"] else { return Result(status: -1, stdout: "", stderr: "not given: \(arguments)\n") }
        do {
            let context = try context(config: nil, environment: environment, lines: Lines(), readingConfig: false)
            return Result(status: 0, stdout: try SignalDetector.forgetPrevious(in: context.stateDirectory, by: "uid \(getuid())"), stderr: "")
        } catch let error as GeolocateError {
            return Result(status: error.exitStatus.rawValue, stdout: "", stderr: ErrorText.oneLine("geolocate: \(error.description)") + "\n")
        } catch {
            return Result(status: -1, stdout: "", stderr: "\(error)\n")
        }
    }
}
