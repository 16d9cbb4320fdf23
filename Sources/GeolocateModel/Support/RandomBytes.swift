import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Random bytes for record ids, taken from the kernel 4 KiB at a time.
///
/// `SystemRandomNumberGenerator` makes one `getrandom` call per 8 bytes: two system calls a
/// record, a tenth of a `track --every-fix`. These are the kernel's bytes all the same
/// (`/dev/urandom`), one read per 256 ids.
package enum RandomBytes {
    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var used = 4096
    }

    private static let pool = Mutex(Pool())

    /// Fills `buffer` (at most 4 KiB) with random bytes.
    package static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        pool.withLock { pool in
            if pool.used + buffer.count > pool.bytes.count {
                pool.bytes.withUnsafeMutableBytes { all in
                    var filled = 0
                    let urandom = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
                    while urandom >= 0 && filled < all.count {
                        let count = read(urandom, all.baseAddress! + filled, all.count - filled)
                        if count > 0 { filled += count } else if count == 0 || errno != EINTR { break }
                    }
                    if urandom >= 0 { close(urandom) }
                    if filled < all.count {
                        // No /dev/urandom (a bare chroot): the standard library's way.
                        var generator = SystemRandomNumberGenerator()
                        for offset in stride(from: 0, to: all.count, by: 8) {
                            all.storeBytes(of: generator.next() as UInt64, toByteOffset: offset, as: UInt64.self)
                        }
                    }
                }
                pool.used = 0
            }
            pool.bytes.withUnsafeBytes { all in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: all[pool.used..<pool.used + buffer.count]))
            }
            pool.used += buffer.count
        }
    }
}
