import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateModel
import Logging
import Synchronization

/// `geolocate trigger ACTION …` in this process: `Trigger.respond`, the call the command
/// makes, on a replay, with a configuration file and a state directory of its own; what it
/// prints, logs and ends with. It reads the few flags these tests give (`--replay`,
/// `--permission`, `--mode`, `--timeout`, `--now`, `--require-location`); the command line's
/// parsing of them is what TriggerEndToEndTests keeps testing through the binary.
struct InProcessTrigger {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String

        func json() throws -> [String: Any] {
            guard let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any] else {
                throw Failure(message: "not one JSON object: \(stdout)")
            }
            return object
        }
    }

    struct Failure: Error {
        var message: String
    }

    /// Log lines as the command line writes them: `geolocate: note: …`.
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
            lines.withLock { $0.append("geolocate: \(label): \(event.message)") }
        }
        var text: String { lines.withLock { $0.map { $0 + "\n" }.joined() } }
    }

    let home = FileManager.default.temporaryDirectory.appendingPathComponent("trigger-\(UUID().uuidString)")
    var configPath: String { home.appendingPathComponent("config.json").path }
    var stateDirectory: String { home.appendingPathComponent("state").path }

    init() {
        try? FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
    }

    /// Runs `["trigger", ACTION, flags…]`; a relative `--replay` is from the project root.
    func run(_ arguments: [String]) async -> Result {
        let lines = Lines()
        let printed = Mutex("")
        do {
            guard arguments.count >= 2, arguments[0] == "trigger" else { throw Failure(message: "not a trigger: \(arguments)") }
            var request = TriggerRequest(action: arguments[1])
            var output = TriggerOutput()
            var index = 2
            func value() throws -> String {
                index += 1
                guard index < arguments.count else { throw Failure(message: "no value for \(arguments[index - 1])") }
                return arguments[index]
            }
            while index < arguments.count {
                switch arguments[index] {
                case "--replay":
                    let path = try value()
                    request.source = .nmea(path: path.hasPrefix("/") ? path : TestPaths.projectRoot.appendingPathComponent(path).path)
                case "--permission": request.permission = Permission(rawValue: try value()).map { [$0] } ?? []
                case "--mode": request.mode = try CollectionMode(parsing: try value())
                case "--timeout": request.timeoutMilliseconds = try DurationText.milliseconds(try value(), bareUnit: .refused)
                case "--now": request.now = try TimeText.milliseconds(try value())
                case "--require-location": output.requireLocation = true
                default: throw Failure(message: "a flag these tests do not give: \(arguments[index])")
                }
                index += 1
            }
            let logger = Logger(label: "test") { _ in lines }
            let context = CommandContext(settings: try ConfigStore(path: configPath).settings(), configPath: configPath,
                                         environment: [:], stateDirectory: stateDirectory,
                                         clock: SystemClock(), elapsed: SystemMonotonicClock(), logger: logger)
            try await Trigger(context).respond(to: request, output: output, mqtt: nil) { line in printed.withLock { $0 += line + "\n" } }
            return Result(status: 0, stdout: printed.withLock { $0 }, stderr: lines.text)
        } catch let error as GeolocateError {
            // The record is printed before the error that ends the command (3, 4).
            return Result(status: error.exitStatus.rawValue, stdout: printed.withLock { $0 }, stderr: lines.text + "geolocate: \(error.description)\n")
        } catch {
            return Result(status: -1, stdout: "", stderr: "\(error)\n")
        }
    }
}
