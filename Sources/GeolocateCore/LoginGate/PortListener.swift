import Foundation
import GeolocateDelivery
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

/// Who listens on a local TCP port: the kernel's socket diagnostics (netlink, as `ss` asks),
/// else `/proc/net/tcp` and `/proc/net/tcp6`.
///
/// gpsd's port 2947 is unprivileged: while gpsd is down any local user could listen there
/// and serve the fixes a login gate decides on.
package enum PortListener {
    /// The uids of the sockets listening on `port` (any local address); empty when none is.
    ///
    /// Asked of netlink first: the kernel then walks its listening sockets only, where making
    /// `/proc/net/tcp` walks the whole connection table, sized by the machine's memory (4 ms of
    /// a login's 24 on a VM of 23 GB holding two sockets).
    package static func owners(port: Int) -> Set<uid_t> {
        if let owners = SocketDiagnostics.listeners(port: port) { return owners }
        return owners(port: port, tables: ["/proc/net/tcp", "/proc/net/tcp6"])
    }

    /// The uids listening on `port` as `tables` (`/proc/net/tcp`'s form) say.
    package static func owners(port: Int, tables: [String]) -> Set<uid_t> {
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

/// The kernel's TCP socket diagnostics (`NETLINK_SOCK_DIAG`, `inet_diag`), asked for the
/// listening sockets of IPv4 and IPv6.
///
/// The structures are laid out by hand from `<linux/inet_diag.h>` (fixed since Linux 3.3):
/// no C module for one request.
package enum SocketDiagnostics {
    private static let sockDiagByFamily: UInt16 = 20
    private static let done: UInt16 = 3, failure: UInt16 = 2
    /// `TCPF_LISTEN`: the state bit of TCP_LISTEN (10).
    private static let listening: UInt32 = 1 << 10

    /// The uids listening on `port`; `nil` when the kernel cannot be asked (netlink refused
    /// by a sandbox), so the caller reads /proc instead.
    package static func listeners(port: Int) -> Set<uid_t>? {
        var owners: Set<uid_t> = []
        for family in [UInt8(AF_INET), UInt8(AF_INET6)] {
            guard let found = listeners(port: port, family: family) else { return nil }
            owners.formUnion(found)
        }
        return owners
    }

    private static func listeners(port: Int, family: UInt8) -> Set<uid_t>? {
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 4 /* NETLINK_SOCK_DIAG */)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // nlmsghdr (16 bytes) and inet_diag_req_v2 (56), in the host's byte order: every TCP
        // socket of `family` listening.
        var request = [UInt8](repeating: 0, count: 72)
        func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
            withUnsafeBytes(of: value) { request.replaceSubrange(offset..<offset + MemoryLayout<T>.size, with: $0) }
        }
        put(UInt32(72), at: 0)
        put(sockDiagByFamily, at: 4)
        put(UInt16(0x1 | 0x300), at: 6)  // NLM_F_REQUEST | NLM_F_DUMP
        put(UInt32(1), at: 8)
        request[16] = family
        request[17] = UInt8(IPPROTO_TCP)
        put(listening, at: 20)
        // sockaddr_nl (12 bytes: family, padding, pid 0 and groups 0): the kernel.
        var kernel = [UInt8](repeating: 0, count: 12)
        withUnsafeBytes(of: sa_family_t(AF_NETLINK)) { kernel.replaceSubrange(0..<2, with: $0) }
        let sent = kernel.withUnsafeBytes { address in
            sendto(fd, request, request.count, 0, address.baseAddress?.assumingMemoryBound(to: sockaddr.self), socklen_t(address.count))
        }
        guard sent == request.count else { return nil }
        var owners: Set<uid_t> = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { return nil }
            var offset = 0
            // Each message: nlmsghdr, then an inet_diag_msg (72 bytes): the socket's source port
            // (big-endian) at 4, its uid at 64.
            while offset + 16 <= count {
                func read<T: FixedWidthInteger>(_: T.Type, at position: Int) -> T {
                    buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: position, as: T.self) }
                }
                let length = Int(read(UInt32.self, at: offset)), type = read(UInt16.self, at: offset + 4)
                guard length >= 16, offset + length <= count else { return nil }
                if type == done { return owners }
                if type == failure { return nil }
                if type == sockDiagByFamily, length >= 16 + 72 {
                    let message = offset + 16
                    if Int(UInt16(bigEndian: read(UInt16.self, at: message + 4))) == port {
                        owners.insert(read(UInt32.self, at: message + 64))
                    }
                }
                offset += (length + 3) & ~3
            }
        }
    }
}
