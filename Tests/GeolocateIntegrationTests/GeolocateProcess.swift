import Foundation
import Testing

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

    /// Runs the binary to its end with `stdin` as its input (else /dev/null).
    ///
    /// Bounded (`Spawn.run`): past `timeLimit` or `outputLimit` bytes the process is killed
    /// and the test fails with what it printed, rather than waiting on it for ever.
    /// - Parameter closingStdout: runs it with its stdout closed (`>&-`), as a careless hook may.
    func run(_ arguments: [String], stdin: Data? = nil, environment extra: [String: String] = [:],
             timeLimit: Duration = Spawn.defaultTimeLimit, outputLimit: Int = Spawn.defaultOutputLimit,
             closingStdout: Bool = false) throws -> Result {
        let command = closingStdout ? ["/bin/sh", "-c", #"exec "$0" "$@" >&-"#, executable.path] : [executable.path]
        let outcome = try Spawn.run(command + arguments, input: stdin, environment: environment(extra),
                                    directory: Self.projectRoot.path, timeLimit: timeLimit, outputLimit: outputLimit)
        return Result(status: outcome.status, stdout: String(decoding: outcome.stdout, as: UTF8.self),
                      stderr: String(decoding: outcome.stderr, as: UTF8.self), signal: outcome.signal)
    }

    /// Starts the binary without waiting for it; its output is collected as it arrives.
    /// With `stdin`, the test writes the process's standard input (`Running.write`), which
    /// stays open until `closeStdin` or the end; else it is /dev/null.
    func start(_ arguments: [String], stdin: Bool = false, environment extra: [String: String] = [:]) throws -> Running {
        try Running([executable.path] + arguments, stdin: stdin, environment: environment(extra), directory: Self.projectRoot.path)
    }

    /// The test process's environment with this run's config, state directory and device.
    private func environment(_ extra: [String: String]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["GEOLOCATE_CONFIG"] = configPath
        environment["GEOLOCATE_STATE_DIR"] = stateDirectory
        environment["GEOLOCATE_SOURCE"] = nil
        // A device without battery, Wi-Fi or modem: records never carry the test machine's own.
        environment["GEOLOCATE_DEVICE_ROOT"] = home.appendingPathComponent("no-device").path
        for (key, value) in extra { environment[key] = value }
        return environment
    }

    /// A started `geolocate` whose output a test can watch while it runs.
    ///
    /// Scoped: `finish` ends it, and so does the end of the last reference (a test that throws
    /// before `finish` leaves nothing running). Its output is read by a thread of its own,
    /// at most `outputLimit` bytes of it.
    final class Running: @unchecked Sendable {
        /// What the reader thread collects, shared with it (the thread must not keep the
        /// `Running` alive, whose end kills the process).
        private final class Collected: @unchecked Sendable {
            let lock = NSLock()
            var bytes: [Data] = [Data(), Data()]
            var lines: [(arrived: ContinuousClock.Instant, text: String)] = []
            var finished = false
            var abandoned = false
        }

        static let outputLimit = 256 << 20

        let pid: pid_t
        private let collected = Collected()
        private var input: Int32
        /// How it ended, once seen: kept here, as the kernel may give its pid to another child.
        private var ended: (code: Int32, signal: Int32?)?

        init(_ arguments: [String], stdin: Bool, environment: [String: String], directory: String) throws {
            let inputPipe = stdin ? try Spawn.pipe() : nil
            let nullDevice = stdin ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC)
            let out = try Spawn.pipe(), err = try Spawn.pipe()
            defer {
                for fd in [inputPipe?.read ?? nullDevice, out.write, err.write] where fd >= 0 { close(fd) }
            }
            do {
                pid = try Spawn.start(arguments, stdin: inputPipe?.read ?? nullDevice, stdout: out.write, stderr: err.write,
                                      environment: environment, directory: directory)
            } catch {
                for fd in [inputPipe?.write, out.read, err.read] { if let fd { close(fd) } }
                throw error
            }
            input = inputPipe?.write ?? -1
            if input >= 0 { _ = fcntl(input, F_SETFL, fcntl(input, F_GETFL) | O_NONBLOCK) }
            let collected = self.collected
            Thread.detachNewThread { Running.read([out.read, err.read], into: collected) }
        }

        deinit {
            if exitStatus() == nil {
                kill(-pid, SIGKILL)
                _ = Spawn.Registry.reap(pid, within: .seconds(10))
            }
            closeStdin()
            collected.lock.lock()
            collected.abandoned = true
            collected.lock.unlock()
        }

        /// Reads stdout and stderr until both end, or the `Running` is gone, or the limit.
        private static func read(_ descriptors: [Int32], into collected: Collected) {
            var open = Array(descriptors.enumerated())
            defer {
                for entry in open { close(entry.element) }
                collected.lock.lock()
                collected.finished = true
                collected.lock.unlock()
            }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while !open.isEmpty {
                var polled = open.map { pollfd(fd: $0.element, events: Int16(POLLIN), revents: 0) }
                // A tenth of a second at most, to notice an abandoned process whose
                // descendant keeps the pipe open.
                let ready = poll(&polled, nfds_t(polled.count), 100)
                collected.lock.lock()
                let abandoned = collected.abandoned
                collected.lock.unlock()
                if abandoned { return }
                guard ready > 0 else { continue }
                for (position, entry) in open.enumerated().reversed() where polled[position].revents != 0 {
                    let count = Glibc.read(entry.element, &buffer, buffer.count)
                    guard count > 0 || (count < 0 && (errno == EINTR || errno == EAGAIN)) else {
                        close(entry.element)
                        open.remove(at: position)
                        continue
                    }
                    guard count > 0 else { continue }
                    collected.lock.lock()
                    if collected.bytes[0].count + collected.bytes[1].count < outputLimit {
                        collected.bytes[entry.offset].append(contentsOf: buffer[..<count])
                        if entry.offset == 0 { noteLines(collected) }
                    }
                    collected.lock.unlock()
                }
            }
        }

        /// Splits the complete stdout lines not yet noted, stamped with when they arrived.
        private static func noteLines(_ collected: Collected) {
            let text = String(decoding: collected.bytes[0], as: UTF8.self)
            let complete = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            for line in complete.dropFirst(collected.lines.count) { collected.lines.append((.now, String(line))) }
        }

        /// How the process ended; nil while it runs.
        private func exitStatus() -> (code: Int32, signal: Int32?)? {
            if ended == nil { ended = Spawn.Registry.reapIfExited(pid) }
            return ended
        }

        /// Whether the process has not exited yet.
        var isRunning: Bool { exitStatus() == nil }

        /// Writes to the process's standard input (started with `stdin: true`), waiting at most
        /// a minute for the process to take it; a process that stopped reading fails the test.
        func write(_ data: Data) {
            var rest = [UInt8](data)[...]
            let deadline = ContinuousClock.now + .seconds(60)
            while !rest.isEmpty, input >= 0, ContinuousClock.now < deadline {
                var ready = [pollfd(fd: input, events: Int16(POLLOUT), revents: 0)]
                guard poll(&ready, 1, 100) > 0 else { continue }
                let written = rest.withUnsafeBytes { Glibc.write(input, $0.baseAddress, $0.count) }
                if written > 0 {
                    rest = rest.dropFirst(written)
                } else if errno != EINTR && errno != EAGAIN {
                    break
                }
            }
            if !rest.isEmpty { Issue.record("process \(pid) took \(data.count - rest.count) of \(data.count) bytes on stdin") }
        }

        /// Closes the process's standard input: end of input.
        func closeStdin() {
            if input >= 0 { close(input) }
            input = -1
        }

        /// stderr so far.
        var stderr: String {
            collected.lock.lock()
            defer { collected.lock.unlock() }
            return String(decoding: collected.bytes[1], as: UTF8.self)
        }

        /// The complete stdout lines so far, with when each arrived.
        var stdoutLines: [(arrived: ContinuousClock.Instant, text: String)] {
            collected.lock.lock()
            defer { collected.lock.unlock() }
            return collected.lines
        }

        /// Waits up to `limit` for the process to exit; `nil` (and the process killed) if it did not.
        func finish(within limit: Duration) -> Result? {
            _ = waitUntil(limit) { exitStatus() != nil }
            guard let ended else {
                // SIGKILL: a process that ignores SIGTERM must not hang the test.
                kill(-pid, SIGKILL)
                ended = Spawn.Registry.reap(pid, within: .seconds(10))
                closeStdin()
                return nil
            }
            closeStdin()
            // Its output ends with it, unless a descendant holds the pipe: then what arrived.
            _ = waitUntil(.seconds(5)) {
                collected.lock.lock()
                defer { collected.lock.unlock() }
                return collected.finished
            }
            collected.lock.lock()
            defer { collected.lock.unlock() }
            return Result(status: ended.code, stdout: String(decoding: collected.bytes[0], as: UTF8.self),
                          stderr: String(decoding: collected.bytes[1], as: UTF8.self), signal: ended.signal)
        }
    }

    static func example(_ name: String) -> String { "Examples/nmea/\(name)" }
    static func fixture(_ name: String) -> String { "Tests/GeolocateCoreTests/Fixtures/\(name)" }
}

extension GeolocateProcess {
    /// Spools every fix of `log` (`track --every-fix`, permission granted) and returns the
    /// records' ids in spool order.
    func spoolEveryFix(of log: String) throws -> [String] {
        let result = try run(["track", "--replay", log, "--every-fix", "--stdout", "--permission", "fine"])
        try #require(result.status == 0, "\(result.stderr)")
        return result.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["id"] as? String
        }
    }

    /// `config set` of each setting, in order.
    func configure(_ settings: [(String, String)]) throws {
        for (key, value) in settings {
            let result = try run(["config", "set", key, value])
            try #require(result.status == 0, "\(key): \(result.stderr)")
        }
    }
}
