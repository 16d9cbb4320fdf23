import Foundation
import GeolocateCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Who listens on a port, as the gate asks before it trusts gpsd's: the kernel's socket
/// diagnostics must say what `/proc/net/tcp` and `/proc/net/tcp6` say (parsed as text, the
/// independent reading), over IPv4 and IPv6, and nothing for a port that is only connected
/// to. A listener of another user is PAMEndToEndTests' (`aGpsdPortHeldByAnotherUserIsNoSource`).
@Suite(.tags(.unit), .timeLimit(.minutes(1)))
struct PortListenerTests {
    static let tables = ["/proc/net/tcp", "/proc/net/tcp6"]

    /// A socket of `family` bound to loopback on a free port, listening or not; its descriptor
    /// and port.
    func loopbackSocket(family: Int32, listening: Bool) throws -> (descriptor: Int32, port: Int) {
        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        var storage = sockaddr_storage(), length: socklen_t
        if family == AF_INET {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeBytes(of: address) { source in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) } }
        } else {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_addr.__in6_u.__u6_addr8.15 = 1
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeBytes(of: address) { source in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) } }
        }
        let bound = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        try #require(bound == 0)
        if listening { try #require(listen(fd, 4) == 0) }
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        // The port sits at the same offset in sockaddr_in and sockaddr_in6, in network order.
        let port = withUnsafeBytes(of: storage) { Int(UInt16($0[2]) << 8 | UInt16($0[3])) }
        return (fd, port)
    }

    @Test(arguments: [AF_INET, AF_INET6]) func theKernelSaysWhatProcSays(family: Int32) throws {
        let listener = try loopbackSocket(family: family, listening: true)
        defer { close(listener.descriptor) }
        let fromProc = PortListener.owners(port: listener.port, tables: Self.tables)
        #expect(fromProc == [geteuid()], "/proc: \(fromProc)")
        #expect(SocketDiagnostics.listeners(port: listener.port) == fromProc)
        #expect(PortListener.owners(port: listener.port) == fromProc)
    }

    @Test func aBoundSocketThatDoesNotListenIsNoListener() throws {
        let bound = try loopbackSocket(family: AF_INET, listening: false)
        defer { close(bound.descriptor) }
        #expect(SocketDiagnostics.listeners(port: bound.port) == [])
        #expect(PortListener.owners(port: bound.port, tables: Self.tables) == [])
    }
}
