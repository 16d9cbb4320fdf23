import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reads small files that anyone may have put in place of ours (configuration, zones, state
/// files, sysfs values), never more than a limit: a file of gigabytes, or a FIFO, must not
/// stall or swell a command.
///
/// Only a regular file is read: it is opened without blocking and judged by `fstat` before a
/// byte is read, so a FIFO, device or directory in its place is refused at once, never waited on.
package enum BoundedFile {
    /// Why a file was not read.
    package enum Failure: Error, Equatable {
        /// No such file (`ENOENT`, or a part of the path that is a file, `ENOTDIR`).
        case missing
        /// Refused or failed, with `errno`.
        case unreadable(Int32)
        /// A FIFO, device, socket or directory (its kind, "a FIFO"): reading it could block
        /// or never end.
        case notRegular(String)
        case tooLarge
    }

    /// The contents of `path`, if it is a regular file of at most `limit` bytes.
    package static func read(_ path: String, limit: Int) -> Result<Data, Failure> {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return .failure(openFailure(errno)) }
        defer { close(fd) }
        return read(descriptor: fd, limit: limit)
    }

    /// The contents of the open file `fd`, if it is a regular file of at most `limit` bytes.
    package static func read(descriptor fd: Int32, limit: Int) -> Result<Data, Failure> {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(.unreadable(errno)) }
        if let kind = irregularKind(info) { return .failure(.notRegular(kind)) }
        if info.st_size > limit { return .failure(.tooLarge) }
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        // Read to the end rather than to st_size: /proc and sysfs files say 0 or 4096.
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, min($0.count, limit + 1 - data.count)) }
            if count > 0 {
                data.append(contentsOf: chunk[..<count])
                if data.count > limit { return .failure(.tooLarge) }
            } else if count == 0 || errno == EAGAIN {
                return .success(data)
            } else if errno != EINTR {
                return .failure(.unreadable(errno))
            }
        }
    }

    /// The contents of `path` when it is a readable regular file of at most `limit` bytes,
    /// else `nil`.
    package static func contents(_ path: String, limit: Int) -> Data? {
        try? read(path, limit: limit).get()
    }

    /// Why `path` cannot be handed to a library that opens it itself (libmosquitto's TLS
    /// files, SQLite's databases), or `nil` when it is a regular file of at most `limit` bytes.
    package static func problem(_ path: String, limit: Int) -> Failure? {
        var info = stat()
        guard stat(path, &info) == 0 else { return openFailure(errno) }
        if let kind = irregularKind(info) { return .notRegular(kind) }
        return info.st_size > limit ? .tooLarge : nil
    }

    /// The failure an `open` or `stat` that set `code` means.
    private static func openFailure(_ code: Int32) -> Failure {
        code == ENOENT || code == ENOTDIR ? .missing : .unreadable(code)
    }

    /// "a FIFO", "a directory"…, for anything but a regular file.
    private static func irregularKind(_ info: stat) -> String? {
        switch info.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFIFO: return "a FIFO"
        case S_IFDIR: return "a directory"
        case S_IFCHR, S_IFBLK: return "a device"
        case S_IFSOCK: return "a socket"
        default: return "a special file"
        }
    }
}

extension BoundedFile.Failure {
    /// The failure as the end of a sentence about the file: "is a FIFO, not a regular file".
    package func text(limit: Int) -> String {
        switch self {
        case .missing: return "does not exist"
        case .unreadable(let code): return "cannot be read: \(ErrorText.posix(code))"
        case .notRegular(let kind): return "is \(kind), not a regular file"
        case .tooLarge: return "is larger than \(BoundedFile.sizeText(limit))"
        }
    }
}

extension BoundedFile {
    /// `limit` in KiB or MiB, as messages say it.
    package static func sizeText(_ limit: Int) -> String {
        limit % (1024 * 1024) == 0 ? "\(limit / (1024 * 1024)) MiB" : "\(limit / 1024) KiB"
    }
}
