import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs the built `geolocate` binary with its own state and config, as a user's shell would.
struct GeolocateProcess {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        /// The signal that ended the process, if one did (then `status` is its number).
        var signal: Int32? = nil

        /// stdout parsed as one JSON object.
        func json() throws -> [String: Any] {
            guard let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any] else {
                throw CocoaError(.coderReadCorrupt)
            }
            return object
        }
    }

    static let projectRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// `$GEOLOCATE_TEST_BINARY` (to run these tests against another build, such as an older
    /// one to see a test fail), else the binary beside the test bundle (SwiftPM builds both
    /// into one folder).
    static let binary: URL = {
        if let path = ProcessInfo.processInfo.environment["GEOLOCATE_TEST_BINARY"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("geolocate")
        if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
        return projectRoot.appendingPathComponent(".build/debug/geolocate")
    }()

    /// The program run: `binary`, or another of the package's executables.
    var executable: URL = GeolocateProcess.binary

    /// The package's executable `name` from the same build as the tests.
    static func builtExecutable(_ name: String) -> URL {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
        return projectRoot.appendingPathComponent(".build/debug/\(name)")
    }

    /// A fresh state directory and config path under the temporary directory.
    let home: URL = FileManager.default.temporaryDirectory.appendingPathComponent("geolocate-e2e-\(UUID().uuidString)")
    var configPath: String { home.appendingPathComponent("config.json").path }
    var stateDirectory: String { home.appendingPathComponent("state").path }

    func run(_ arguments: [String], stdin: Data? = nil, environment extra: [String: String] = [:]) throws -> Result {
        let (process, out, err, input) = makeProcess(arguments, environment: extra)
        try process.run()
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try input.fileHandleForWriting.close()
        let stdoutData = out.fileHandleForReading.readDataToEndOfFile()
        let stderrData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdoutData, as: UTF8.self),
                      stderr: String(decoding: stderrData, as: UTF8.self))
    }

    /// Starts the binary without waiting for it; its output is collected as it arrives.
    /// With `stdin`, the test writes the process's standard input (`Running.write`), which
    /// stays open until `closeStdin` or the end; else it is closed at once.
    func start(_ arguments: [String], stdin: Bool = false, environment extra: [String: String] = [:]) throws -> Running {
        let (process, out, err, input) = makeProcess(arguments, environment: extra)
        try process.run()
        if !stdin { try input.fileHandleForWriting.close() }
        return Running(process: process, stdout: out, stderr: err, stdin: stdin ? input.fileHandleForWriting : nil)
    }

    private func makeProcess(_ arguments: [String], environment extra: [String: String]) -> (Process, Pipe, Pipe, Pipe) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = Self.projectRoot
        var environment = ProcessInfo.processInfo.environment
        environment["GEOLOCATE_CONFIG"] = configPath
        environment["GEOLOCATE_STATE_DIR"] = stateDirectory
        environment["GEOLOCATE_SOURCE"] = nil
        // A device without battery, Wi-Fi or modem: records never carry the test machine's own.
        environment["GEOLOCATE_DEVICE_ROOT"] = home.appendingPathComponent("no-device").path
        for (key, value) in extra { environment[key] = value }
        process.environment = environment
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        return (process, out, err, input)
    }

    /// A started `geolocate` whose output a test can watch while it runs.
    final class Running: @unchecked Sendable {
        private let process: Process
        private let lock = NSLock()
        private var collected: [Data] = [Data(), Data()]
        private var lines: [(arrived: ContinuousClock.Instant, text: String)] = []
        private let readers = DispatchGroup()
        private var input: FileHandle?

        init(process: Process, stdout: Pipe, stderr: Pipe, stdin: FileHandle?) {
            self.process = process
            input = stdin
            for (index, pipe) in [stdout, stderr].enumerated() {
                DispatchQueue.global().async(group: readers) {
                    while case let data = pipe.fileHandleForReading.availableData, !data.isEmpty {
                        self.lock.lock()
                        self.collected[index].append(data)
                        if index == 0 { self.noteLines() }
                        self.lock.unlock()
                    }
                }
            }
        }

        /// Splits the complete stdout lines not yet noted, stamped with when they arrived.
        private func noteLines() {
            let text = String(decoding: collected[0], as: UTF8.self)
            let complete = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            for line in complete.dropFirst(lines.count) { lines.append((.now, String(line))) }
        }

        var pid: Int32 { process.processIdentifier }

        /// Whether the process has not exited yet.
        var isRunning: Bool { process.isRunning }

        /// Writes to the process's standard input (started with `stdin: true`).
        func write(_ data: Data) { input?.write(data) }

        /// Closes the process's standard input: end of input.
        func closeStdin() {
            try? input?.close()
            input = nil
        }

        /// stderr so far.
        var stderr: String {
            lock.lock()
            defer { lock.unlock() }
            return String(decoding: collected[1], as: UTF8.self)
        }

        /// The complete stdout lines so far, with when each arrived.
        var stdoutLines: [(arrived: ContinuousClock.Instant, text: String)] {
            lock.lock()
            defer { lock.unlock() }
            return lines
        }

        /// Waits up to `limit` for the process to exit; `nil` (and the process killed) if it did not.
        func finish(within limit: Duration) -> Result? {
            guard waitUntil(limit, { !process.isRunning }) else {
                // SIGKILL: a process that ignores SIGTERM must not hang the test.
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                closeStdin()
                return nil
            }
            process.waitUntilExit()
            closeStdin()
            readers.wait()
            lock.lock()
            defer { lock.unlock() }
            return Result(status: process.terminationStatus, stdout: String(decoding: collected[0], as: UTF8.self),
                          stderr: String(decoding: collected[1], as: UTF8.self),
                          signal: process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil)
        }
    }

    static func example(_ name: String) -> String { "Examples/nmea/\(name)" }
    static func fixture(_ name: String) -> String { "Tests/GeolocateCoreTests/Fixtures/\(name)" }
}
