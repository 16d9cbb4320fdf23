import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Child processes started as the leader of their own process group, so a test can end them
/// and everything they started (gpsfake's gpsd) by the group id in every outcome.
enum ProcessGroup {
    struct SpawnError: Error, CustomStringConvertible {
        var command: String
        var code: Int32
        var description: String { "cannot start \(command): \(String(cString: strerror(code)))" }
    }

    /// Starts `arguments` (the command is looked up on `PATH`) with stdin from /dev/null and
    /// stdout and stderr to `outputPath`.
    static func spawn(_ arguments: [String], outputPath: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let status = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard status == 0 else { throw SpawnError(command: arguments[0], code: status) }
        return pid
    }

    /// Ends the group led by `pid`: SIGTERM, SIGKILL after `grace` if the leader is still
    /// running, then SIGKILL for any member that outlived the leader.
    static func stop(_ pid: pid_t, grace: Duration = .seconds(2)) {
        kill(-pid, SIGTERM)
        if !reap(pid, within: grace) {
            kill(-pid, SIGKILL)
            _ = reap(pid, within: .seconds(5))
        }
        kill(-pid, SIGKILL)
    }

    /// Waits for the child `pid` to exit and collects it; `false` if it is still running.
    private static func reap(_ pid: pid_t, within limit: Duration) -> Bool {
        waitUntil(limit) {
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            return result == pid || (result < 0 && errno == ECHILD)
        }
    }
}

/// Polls `condition` until it holds or `limit` passes; returns whether it held.
func waitUntil(_ limit: Duration, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while true {
        if try condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        usleep(10_000)
    }
}

/// TCP on 127.0.0.1, for finding ports and knowing when a server listens.
enum Loopback {
    /// A port nothing listens on now (the kernel's pick for an ephemeral bind).
    static func freePort() throws -> Int {
        let (port, fd) = try refusingPort()
        close(fd)
        return port
    }

    /// A port held bound but not listening, until the caller closes `fd`: connections to it
    /// are refused, and no other test's server can take it meanwhile, as it can a free port.
    static func refusingPort() throws -> (port: Int, fd: Int32) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            close(fd)
            throw ProcessGroup.SpawnError(command: "bind 127.0.0.1:0", code: code)
        }
        return (Int(UInt16(bigEndian: address.sin_port)), fd)
    }

    /// Whether something accepts connections on `port`.
    static func isListening(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}

/// Other programs the tests run to their end: openssl, mosquitto_passwd, nmea-gen.py,
/// gpsbabel, ogr2ogr.
enum Tool {
    struct Failed: Error, CustomStringConvertible {
        var arguments: [String]
        var status: Int32
        var description: String { "\(arguments.joined(separator: " ")) exited with \(status)" }
    }

    /// Runs `arguments` (looked up on `PATH`) and returns its stdout.
    /// - Throws: `Failed` when it exits with a status other than 0.
    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failed(arguments: arguments, status: process.terminationStatus) }
        return String(decoding: data, as: UTF8.self)
    }

    /// Whether the kernel says the system clock is synchronised, asked with Python's ctypes
    /// (`adjtimex`, as `timedatectl` does): the oracle for `clockSkewed`.
    static func systemClockIsSynchronized() throws -> Bool {
        let script = """
            import ctypes
            class Timex(ctypes.Structure):
                _fields_ = [("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
                            ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long), ("status", ctypes.c_int),
                            ("rest", ctypes.c_byte * 256)]
            state = Timex()
            result = ctypes.CDLL(None).adjtimex(ctypes.byref(state))
            print("yes" if result not in (-1, 5) and not state.status & 0x40 else "no")
            """
        return try run(["python3", "-c", script]).hasPrefix("yes")
    }

    /// `nmea-gen.py` of ../shared/tools with `arguments`.
    static func generateNMEA(_ arguments: [String]) throws {
        try run(["python3", GeolocateProcess.projectRoot.appendingPathComponent("../shared/tools/nmea-gen.py").standardized.path, "--quiet"] + arguments)
    }
}
