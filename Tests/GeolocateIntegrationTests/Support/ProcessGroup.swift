import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Child processes started as the leader of their own process group, so a test can end them
/// and everything they started (gpsfake's gpsd) by the group id in every outcome.
enum ProcessGroup {
    typealias SpawnError = Spawn.Failure

    /// Starts `arguments` (the command is looked up on `PATH`) with stdin from /dev/null and
    /// stdout and stderr to `outputPath`, inheriting no other descriptor (`Spawn.start`).
    static func spawn(_ arguments: [String], outputPath: String) throws -> pid_t {
        let input = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw SpawnError(command: "/dev/null", code: errno) }
        defer { close(input) }
        let output = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard output >= 0 else { throw SpawnError(command: outputPath, code: errno) }
        defer { close(output) }
        return try Spawn.start(arguments, stdin: input, stdout: output, stderr: output)
    }

    /// Ends the group led by `pid`: SIGTERM, SIGKILL after `grace` if the leader is still
    /// running, then SIGKILL for any member that outlived the leader.
    static func stop(_ pid: pid_t, grace: Duration = .seconds(2)) {
        Spawn.stop(pid, grace: grace)
    }
}

/// TCP on 127.0.0.1, for finding ports and knowing when a server listens.
enum Loopback {
    /// A port kept for a server the test starts: bound here with SO_REUSEADDR and not
    /// listening, so the server (gpsd and mosquitto set SO_REUSEADDR too) can bind and listen
    /// on it while nothing else can: no ephemeral bind or outgoing connection of another
    /// process gets it between the pick and the server's bind, as one could a port closed
    /// before the server started. Kept until `release` or the end of the reservation.
    final class Reservation {
        let port: Int
        private var fd: Int32

        init() throws {
            (port, fd) = try Loopback.bind(reusable: true)
        }

        /// Gives the port up (a server that took it keeps it); calling it again does nothing.
        func release() {
            if fd >= 0 { close(fd) }
            fd = -1
        }

        deinit { release() }
    }

    /// A port held bound but not listening, until the caller closes `fd`: connections to it
    /// are refused, and no other test's server can take it meanwhile, as it can a free port.
    static func refusingPort() throws -> (port: Int, fd: Int32) {
        try bind(reusable: false)
    }

    /// A TCP socket bound to a port of the kernel's choice on 127.0.0.1, not listening.
    private static func bind(reusable: Bool) throws -> (port: Int, fd: Int32) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var one: Int32 = 1
        if reusable { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
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
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
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
        var stderr = ""
        var description: String { "\(arguments.joined(separator: " ")) exited with \(status)\(stderr.isEmpty ? "" : ": \(stderr.suffix(2000))")" }
    }

    /// Runs `arguments` (looked up on `PATH`) to its end within `timeLimit` and returns its stdout.
    /// - Throws: `Failed` when it exits with a status other than 0; `Spawn.Overrun` past the limit.
    @discardableResult
    static func run(_ arguments: [String], timeLimit: Duration = Spawn.defaultTimeLimit) throws -> String {
        let outcome = try Spawn.run(arguments, timeLimit: timeLimit)
        guard outcome.status == 0, outcome.signal == nil else {
            throw Failed(arguments: arguments, status: outcome.status, stderr: String(decoding: outcome.stderr, as: UTF8.self))
        }
        return String(decoding: outcome.stdout, as: UTF8.self)
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
