import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The temporary file an export is writing, kept where a signal handler can remove it: an
/// export stopped by SIGINT or SIGTERM leaves neither a partial file nor its temporary one.
///
/// Creating, renaming into place and removing each happen under one lock, so a signal lands
/// either before the file exists, while it may be removed, or after it has its final name.
package final class PendingFile: Sendable {
    private let path = Mutex<String?>(nil)

    package init() {}

    /// Creates a file from `template` (ending in `XXXXXX`) with `mkstemp`: an unpredictable
    /// name, `O_EXCL`, mode 0600.
    /// - Returns: its descriptor, or -1 with `errno` set.
    func create(_ template: String) -> Int32 {
        path.withLock { path in
            var bytes = Array(template.utf8CString)
            let fd = mkstemp(&bytes)
            if fd >= 0 { path = bytes.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } }
            return fd
        }
    }

    /// Renames the file to `target`; it is no longer removed after that.
    /// - Returns: whether the rename succeeded (else `errno` says why).
    func commit(to target: String) -> Bool {
        path.withLock { path in
            guard let written = path, rename(written, target) == 0 else { return false }
            path = nil
            return true
        }
    }

    /// Removes the file being written, if any; a signal handler's last step before the
    /// process ends.
    package func abandon() {
        path.withLock { path in
            if let written = path { unlink(written) }
            path = nil
        }
    }
}
