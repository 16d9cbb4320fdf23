import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TPM 2.0 simulator (swtpm, Debian `swtpm`) on a pair of free loopback ports, with its state
/// in a directory of its own: started by a test, stopped at the end of its last reference.
///
/// swtpm's TCTI talks to the TPM on `port` and to its control channel on `port + 1`.
package final class SoftwareTPM {
    package let directory = FileManager.default.temporaryDirectory.appendingPathComponent("geolocate-swtpm-\(UUID().uuidString)")
    package let port: Int
    private var pid: pid_t = 0

    package var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }

    package init() throws {
        let state = directory.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        port = try TPMLoopback.freePortPair()
        let log = directory.appendingPathComponent("swtpm.log").path
        let arguments = ["/usr/bin/swtpm", "socket", "--tpm2", "--tpmstate", "dir=\(state.path)",
                         "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1",
                         "--ctrl", "type=tcp,port=\(port + 1),bindaddr=127.0.0.1",
                         "--flags", "not-need-init,startup-clear", "--log", "file=\(log)"]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        // The test's thread may block signals, and a child inherits that: swtpm would then
        // never see the SIGTERM that stops it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard status == 0 else { throw SoftwareTPMError(message: "cannot start swtpm: \(String(cString: strerror(status)))") }
        var waited = 0
        while !TPMLoopback.isListening(port) || !TPMLoopback.isListening(port + 1) {
            var exit: Int32 = 0
            guard waitpid(pid, &exit, WNOHANG) == 0, waited < 1000 else {
                stop()
                throw SoftwareTPMError(message: "swtpm did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
            }
            usleep(10_000)
            waited += 1
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Ends swtpm (SIGTERM, which it handles by shutting down) and waits for it.
    package func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGTERM)
        var exit: Int32 = 0
        while waitpid(pid, &exit, 0) == -1 && errno == EINTR {}
        pid = 0
    }
}

package struct SoftwareTPMError: Error, CustomStringConvertible {
    package let message: String
    package var description: String { message }
}

/// Loopback ports for the simulator and for servers that never answer.
package enum TPMLoopback {
    /// A port `p` such that `p` and `p + 1` are both free now.
    package static func freePortPair() throws -> Int {
        for _ in 0..<100 {
            let first = try listener(port: 0)
            let port = Int(boundPort(first))
            close(first)
            guard port < 65_535, let second = try? listener(port: port + 1), let again = try? listener(port: port) else { continue }
            close(second)
            close(again)
            return port
        }
        throw SoftwareTPMError(message: "no two free loopback ports in a row")
    }

    /// A socket listening on 127.0.0.1:`port` (0: any free one), never accepting: a peer that
    /// connects and is never answered.
    package static func listener(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw SoftwareTPMError(message: "cannot listen on 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
        return fd
    }

    package static func boundPort(_ fd: Int32) -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Whether something accepts connections on 127.0.0.1:`port`.
    package static func isListening(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
