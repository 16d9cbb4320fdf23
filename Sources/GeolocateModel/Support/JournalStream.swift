#if canImport(Glibc)
import Glibc
#endif

/// Whether a standard stream is connected to the systemd journal, as `JOURNAL_STREAM` says.
///
/// systemd sets `JOURNAL_STREAM=DEVICE:INODE` for a service whose output goes to the journal;
/// the variable is inherited by every child, so it counts only while the stream's own
/// device and inode still match it (a child whose stderr was redirected to a file must keep
/// writing plain lines there). See systemd.exec(5) and sd-daemon(3).
package enum JournalStream {
    /// Whether file descriptor `fd` (2 for standard error) is the stream `JOURNAL_STREAM`
    /// in `environment` names.
    package static func isConnected(_ fd: Int32, environment: [String: String]) -> Bool {
        guard let (device, inode) = parse(environment["JOURNAL_STREAM"]) else { return false }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    /// The device and inode of a `JOURNAL_STREAM` value (`"8:12345"`, decimal), or `nil`
    /// when it is absent or not of that form.
    package static func parse(_ value: String?) -> (device: UInt64, inode: UInt64)? {
        guard let value else { return nil }
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return nil }
        return (device, inode)
    }
}
