import Foundation
import GeolocateDelivery
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

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
