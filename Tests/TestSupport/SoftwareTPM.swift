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

    /// The private CA's root certificate (PEM), when the TPM was made `certified`.
    package var rootCertificate: URL { directory.appendingPathComponent("localca/swtpm-localca-rootca-cert.pem") }
    /// The private CA's intermediate certificate (PEM), which signed the EK certificates.
    package var intermediateCertificate: URL { directory.appendingPathComponent("localca/issuercert.pem") }

    /// With `certified`, the TPM is first manufactured as a real one is: `swtpm_setup` makes
    /// its endorsement keys and writes their certificates into its NV, issued by a private
    /// two-level CA it makes in `directory` (nothing is read or written in /etc or $HOME).
    package init(certified: Bool = false) throws {
        let state = directory.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        if certified {
            do {
                try Self.manufacture(state: state, in: directory)
            } catch {
                try? FileManager.default.removeItem(at: directory)
                throw error
            }
        }
        port = try TPMLoopback.freePortPair()
        let log = directory.appendingPathComponent("swtpm.log").path
        let arguments = ["/usr/bin/swtpm", "socket", "--tpm2", "--tpmstate", "dir=\(state.path)",
                         "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1",
                         "--ctrl", "type=tcp,port=\(port + 1),bindaddr=127.0.0.1",
                         "--flags", "not-need-init,startup-clear", "--log", "file=\(log)"]
        pid = try Self.spawn(arguments)
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

    /// Runs `swtpm_setup` on `state` with a configuration of its own, which sends the
    /// certificates to `swtpm_localca` with a CA kept in `directory` (made on first use).
    private static func manufacture(state: URL, in directory: URL) throws {
        let configuration = directory.appendingPathComponent("conf"), authority = directory.appendingPathComponent("localca")
        try FileManager.default.createDirectory(at: configuration, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: authority, withIntermediateDirectories: true)
        let files = [
            "swtpm-localca.conf": """
                statedir = \(authority.path)
                signingkey = \(authority.path)/signkey.pem
                issuercert = \(authority.path)/issuercert.pem
                certserial = \(authority.path)/certserial

                """,
            "swtpm-localca.options": "--platform-manufacturer geolocate\n--platform-version 2.1\n--platform-model test\n",
            "swtpm_setup.conf": """
                create_certs_tool = /usr/bin/swtpm_localca
                create_certs_tool_config = \(configuration.path)/swtpm-localca.conf
                create_certs_tool_options = \(configuration.path)/swtpm-localca.options
                active_pcr_banks = sha256

                """,
        ]
        for (name, text) in files { try Data(text.utf8).write(to: configuration.appendingPathComponent(name)) }
        let log = directory.appendingPathComponent("swtpm_setup.log").path
        let arguments = ["/usr/bin/swtpm_setup", "--tpm2", "--tpmstate", state.path, "--config", configuration.appendingPathComponent("swtpm_setup.conf").path,
                         "--create-ek-cert", "--pcr-banks", "sha256", "--logfile", log]
        let setup = try spawn(arguments, environment: ["HOME": directory.path, "XDG_CONFIG_HOME": configuration.path])
        var status: Int32 = 0
        while waitpid(setup, &status, 0) == -1 && errno == EINTR {}
        guard status == 0 else {
            throw SoftwareTPMError(message: "swtpm_setup failed (\(status)): \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
    }

    /// Starts `arguments` with stdout and stderr to /dev/null, `environment` over the test's own.
    private static func spawn(_ arguments: [String], environment: [String: String] = [:]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        // The test's thread may block signals, and a child inherits that: swtpm would then
        // never see the SIGTERM that stops it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard status == 0 else { throw SoftwareTPMError(message: "cannot start \(arguments[0]): \(String(cString: strerror(status)))") }
        return pid
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

    package init(message: String) {
        self.message = message
    }
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
