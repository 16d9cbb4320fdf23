#if canImport(Glibc)
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif


/// Unbuffered writes to the standard streams, so stdout carries whole JSON lines only.
enum FileHandleOutput {
    /// Writes `text` to stdout.
    /// - Throws: `GeolocateError.outputFailed` (74) when stdout cannot take it (a full disk,
    ///   a reader that went away): a command whose output is lost must not say it succeeded.
    static func stdout(_ text: String) throws {
        if let code = write(1, text) { throw GeolocateError.outputFailed(reason: ErrorText.posix(code)) }
    }

    static func stderr(_ text: String) { _ = write(2, text) }

    /// Writes all of `text`; the `errno` of a failed write, else `nil`.
    ///
    /// With `giveUp`, it waits for room in 50 ms slices and returns `ECANCELED` once `giveUp`
    /// says so: a reader that stopped reading must not hold track past a stop.
    static func write(_ fd: Int32, _ text: String, giveUp: (() -> Bool)? = nil) -> Int32? {
        write(fd, Array(text.utf8), giveUp: giveUp)
    }

    /// `write(_:_:giveUp:)` of bytes, which track's lines already are.
    static func write(_ fd: Int32, _ bytes: [UInt8], giveUp: (() -> Bool)? = nil) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            if let giveUp {
                var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&descriptor, 1, 50)
                if ready == 0 || (ready < 0 && errno == EINTR) {
                    if giveUp() { return ECANCELED }
                    continue
                }
            }
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return n < 0 ? errno : EIO }
            offset += n
        }
        return nil
    }
}
