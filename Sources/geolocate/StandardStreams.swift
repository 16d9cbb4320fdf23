#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Unbuffered writes to the standard streams, so stdout carries whole JSON lines only.
enum FileHandleOutput {
    /// Writes `text` to stdout; `false` when it could not (the reader went away).
    @discardableResult
    static func stdout(_ text: String) -> Bool { write(1, text) }
    static func stderr(_ text: String) { _ = write(2, text) }

    private static func write(_ fd: Int32, _ text: String) -> Bool {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }
}
