import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool

#if canImport(Glibc)
import Glibc
#endif

/// `trigger ACTION --pam`: what `pam_exec` runs (SPEC §14), and what it may trust.
///
/// The hook runs with the environment of whoever is logging in (under `su`, the calling
/// user's), so nothing it reads from there may choose a file, a source or a state directory:
/// `environment(from:stateDirectory:)` keeps only the `PAM_*` values and a fixed `PATH`.
package struct PAMHook: Sendable {
    /// `PAM_TYPE`: which stack runs the hook.
    package enum Stage: Equatable, Sendable {
        /// `auth` or `account`: the hook decides.
        case decides(String)
        /// Any other type (`session`, `password`, `open_session`…): nothing to decide, exit 0.
        case notDeciding(String)
        /// No `PAM_TYPE`: not run by `pam_exec`; refused (fail closed).
        case missing
    }

    package var stage: Stage
    package var subject: Subject

    /// The `PATH` the hook runs with: the system's, never the caller's.
    package static let path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

    package init(environment: [String: String]) {
        switch environment["PAM_TYPE"] {
        case nil, "": stage = .missing
        case let type? where type == "auth" || type == "account": stage = .decides(type)
        case let type?: stage = .notDeciding(type)
        }
        subject = Subject(pamEnvironment: environment)
    }

    /// The environment the hook's collection sees: the `PAM_*` values, `PATH`, and the state
    /// directory as `GEOLOCATE_STATE_DIR`; no `GEOLOCATE_*`, `XDG_*` or `HOME` of the caller's.
    package static func environment(from callers: [String: String], stateDirectory: String) -> [String: String] {
        var environment = callers.filter { $0.key.hasPrefix("PAM_") }
        environment["PATH"] = path
        environment["GEOLOCATE_STATE_DIR"] = stateDirectory
        return environment
    }

    /// The one syslog line of a decision: who, from where, the decision, why and the record,
    /// never coordinates (the log is read more widely than the spool).
    package func decisionLine(action: String, decision: String, reason: String, zone: String? = nil, recordID: String?) -> String {
        var line = "\(action) user=\(Subject.syslogField(subject.user)) service=\(Subject.syslogField(subject.service))"
        line += " rhost=\(Subject.syslogField(subject.remoteHost)) tty=\(Subject.syslogField(subject.tty))"
        line += " decision=\(decision) reason=\(Subject.syslogField(reason))"
        if let zone { line += " zone=\(Subject.syslogField(zone))" }
        if let recordID { line += " record=\(recordID)" }
        return line
    }
}

/// Lines to the system log, facility authpriv: where PAM modules write, readable by root only.
package enum SystemLog {
    /// The priorities geolocate writes at.
    package enum Priority: Sendable {
        case error, warning, notice, info

        var value: Int32 {
            switch self {
            case .error: return LOG_ERR
            case .warning: return LOG_WARNING
            case .notice: return LOG_NOTICE
            case .info: return LOG_INFO
            }
        }
    }

    /// Writes `line` as `geolocate[PID]: line` to authpriv at `priority`.
    ///
    /// The text goes as a `%s` argument, never as the format: it holds what users typed.
    package static func write(_ priority: Priority, _ line: String) {
        openlog(identity, LOG_PID, LOG_AUTHPRIV)
        line.withCString { text in
            withVaList([text]) { vsyslog(priority.value, "%s", $0) }
        }
    }

    /// The tag before each line; `openlog` keeps the pointer, so it must live as long as the process.
    private nonisolated(unsafe) static let identity = strdup("geolocate")
}

/// Whether a file the hook relies on could have been written by someone other than root
/// (SPEC §14): a configuration, zones file or state directory any user could change would let
/// that user decide who logs in.
package enum TrustedPath {
    /// Why `path` cannot be trusted, or `nil` when it, and every directory above it, is owned
    /// by root (or one of `owners`) and writable by no one else.
    ///
    /// A sticky directory owned by root (`/tmp`) is trusted as a parent: others may not
    /// rename or remove what they do not own there. Both the path as written and the file it
    /// finally names (through symlinks) are checked, since whoever may change a link chooses
    /// its target.
    package static func problem(_ path: String, owners: Set<uid_t> = []) -> String? {
        let trusted = owners.union([0])
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var paths = [absolute]
        if let real = realpath(absolute, nil) {
            paths.append(String(cString: real))
            free(real)
        }
        for candidate in paths {
            var prefix = ""
            let parts = candidate.split(separator: "/").map(String.init)
            var chain = ["/"]
            for part in parts {
                prefix += "/" + part
                chain.append(prefix)
            }
            for (index, entry) in chain.enumerated() {
                var info = stat()
                guard lstat(entry, &info) == 0 else {
                    // A file that does not exist yet (a state file) is judged by its directory.
                    if index == chain.count - 1, errno == ENOENT { break }
                    return "\(entry) cannot be checked: \(ErrorText.posix(errno))"
                }
                let isLink = info.st_mode & S_IFMT == S_IFLNK
                let isDirectory = info.st_mode & S_IFMT == S_IFDIR
                if !trusted.contains(info.st_uid) {
                    return "\(entry) belongs to uid \(info.st_uid), not root"
                }
                if isLink { continue }
                let groupWritable = info.st_mode & S_IWGRP != 0 && info.st_gid != 0
                let otherWritable = info.st_mode & S_IWOTH != 0
                let stickyRootDirectory = isDirectory && info.st_mode & S_ISVTX != 0 && info.st_uid == 0 && index < chain.count - 1
                if (groupWritable || otherWritable) && !stickyRootDirectory {
                    return "\(entry) is writable by \(otherWritable ? "every user" : "group \(info.st_gid)") (mode \(String(info.st_mode & 0o7777, radix: 8)))"
                }
            }
        }
        return nil
    }

    /// The uid of the system user `name` (such as `geolocate` or `gpsd`), if there is one.
    package static func uid(ofUser name: String) -> uid_t? {
        guard let entry = getpwnam(name) else { return nil }
        return entry.pointee.pw_uid
    }
}

/// Who listens on a local TCP port, from `/proc/net/tcp` and `/proc/net/tcp6`.
///
/// gpsd's port 2947 is unprivileged: while gpsd is down any local user could listen there
/// and serve the fixes a login gate decides on.
package enum PortListener {
    /// The uids of the sockets listening on `port` (any local address); empty when none is.
    package static func owners(port: Int, tables: [String] = ["/proc/net/tcp", "/proc/net/tcp6"]) -> Set<uid_t> {
        var owners: Set<uid_t> = []
        for table in tables {
            guard let data = BoundedFile.contents(table, limit: 64 * 1024 * 1024) else { continue }
            owners.formUnion(self.owners(port: port, table: String(decoding: data, as: UTF8.self)))
        }
        return owners
    }

    /// The uids in one table's text listening on `port`.
    ///
    /// A row is `sl local_address rem_address st … uid …`: the local address ends in
    /// `:PORT` in hex, state `0A` is LISTEN and the uid is the eighth column.
    static func owners(port: Int, table: String) -> Set<uid_t> {
        var owners: Set<uid_t> = []
        for line in table.split(separator: "\n").dropFirst() {
            let columns = line.split(separator: " ", omittingEmptySubsequences: true)
            guard columns.count > 7, columns[3] == "0A",
                  let colon = columns[1].lastIndex(of: ":"),
                  Int(columns[1][columns[1].index(after: colon)...], radix: 16) == port,
                  let uid = uid_t(columns[7]) else { continue }
            owners.insert(uid)
        }
        return owners
    }
}

extension SourceOpener {
    /// This opener, refusing a gpsd on this machine whose port a user other than root,
    /// `gpsd` or the one running geolocate listens on (SPEC §14): such a source is
    /// unavailable, so nothing it serves is reported, remembered as the last known location
    /// or weighed by a login gate.
    ///
    /// Port 2947 is unprivileged: while gpsd is down any local user could listen there. The
    /// host counts as this machine when any address it resolves to is a loopback, unspecified
    /// or local interface address (`localhost`, `[::ffff:127.0.0.1]`, the host name, `0.0.0.0`);
    /// a remote gpsd cannot be checked this way and is opened as before.
    package func trustingOnlySystemListeners() -> SourceOpener {
        let inner = self
        return SourceOpener { host, port, opening in
            if PortListener.isThisMachine(host) {
                let trusted = Set([0, geteuid()] + [TrustedPath.uid(ofUser: "gpsd"), TrustedPath.uid(ofUser: "_gpsd")].compactMap { $0 })
                if let stranger = PortListener.owners(port: port).subtracting(trusted).min() {
                    throw SourceError.unavailable("gpsd://\(host):\(port): the port is held by uid \(stranger), not root, gpsd or this user, so its fixes are not trusted")
                }
            }
            return try inner.gpsd(host, port, opening)
        }
    }
}

extension PortListener {
    /// Whether `host` names this machine: any address it resolves to is a loopback or
    /// unspecified address or one of this machine's interfaces. A name that does not resolve
    /// counts as this machine, so the check errs on the side of looking.
    package static func isThisMachine(_ host: String) -> Bool {
        let name = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &result) == 0, let first = result else { return true }
        defer { freeaddrinfo(result) }
        let local = interfaceAddresses()
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let address = current.pointee.ai_addr, let bytes = addressBytes(address) {
                let unspecified = bytes.allSatisfy { $0 == 0 }
                let loopback = (bytes.count == 4 && bytes[0] == 127) || bytes == Array(repeating: 0, count: 15) + [1]
                if unspecified || loopback || local.contains(bytes) { return true }
            }
            entry = current.pointee.ai_next
        }
        return false
    }

    /// The address in `socketAddress` as 4 (IPv4, an IPv4-mapped IPv6 address included) or
    /// 16 bytes; `nil` for other families.
    private static func addressBytes(_ socketAddress: UnsafeMutablePointer<sockaddr>) -> [UInt8]? {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            return socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) }
            }
        case AF_INET6:
            let bytes = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) }
            }
            let mapped = bytes.prefix(10).allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
            return mapped ? Array(bytes.suffix(4)) : bytes
        default:
            return nil
        }
    }

    /// The addresses of this machine's interfaces.
    private static func interfaceAddresses() -> Set<[UInt8]> {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var addresses: Set<[UInt8]> = []
        var entry = list
        while let current = entry {
            if let address = current.pointee.ifa_addr, let bytes = addressBytes(address) { addresses.insert(bytes) }
            entry = current.pointee.ifa_next
        }
        return addresses
    }
}
