import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool

#if canImport(Glibc)
import Glibc
#endif

/// `geolocate export`: records from the spool or from NDJSON, in a time window, streamed into
/// one of the `ExportFormat`s with constant memory.
package struct Exporter {
    /// Where the records come from.
    package enum Input {
        /// The spool: pending records, and delivered ones kept for `spool.keepDelivered`.
        case spool(Spool)
        /// No spool yet: the export has no records.
        case nothing
        /// §3.1 records, one JSON object a line (`track --stdout`), from this descriptor.
        case ndjson(fd: Int32, name: String)
    }

    package var format: ExportFormat
    /// `privacy.*` and `fields.*` in force: an export file leaves the device as surely as a
    /// POST, so each record is limited by it exactly as flush limits what it sends.
    package var policy: OutputPolicy
    /// Only records whose fix is at or after this time (epoch ms).
    package var since: Int64?
    /// Only records whose fix is at or before this time (epoch ms).
    package var until: Int64?

    package init(format: ExportFormat, policy: OutputPolicy, since: Int64? = nil, until: Int64? = nil) {
        self.format = format
        self.policy = policy
        self.since = since
        self.until = until
    }

    /// The spool of `stateDirectory`, opened for reading only (SPEC §12): an export creates,
    /// locks and migrates nothing, and works for a user who may only read the spool.
    /// - Throws: `GeolocateError.spoolDamaged`, `.stateUnreadable` (65).
    package static func spoolInput(stateDirectory: String, elapsed: MonotonicClock) throws -> Input {
        guard let spool = try Spool.openForReading(stateDirectory: stateDirectory, elapsed: elapsed) else { return .nothing }
        guard spool.schemaVersion >= Spool.oldestExportableSchema else {
            throw GeolocateError.stateUnreadable(path: spool.path, reason: "written by an older geolocate (schema version \(spool.schemaVersion)); a command that writes the spool, such as geolocate flush --dry-run, upgrades it")
        }
        return .spool(spool)
    }

    /// An export in the window `since`...`until` as typed (`--since`, `--until`).
    /// - Throws: `GeolocateError.usage` for a time that is none of the forms `time` reads.
    package init(format: ExportFormat, policy: OutputPolicy, since: String?, until: String?, clock: WallClock) throws {
        let now = clock.nowMilliseconds
        self.init(format: format, policy: policy, since: try since.map { try Exporter.time($0, now: now) },
                  until: try until.map { try Exporter.time($0, now: now) })
    }

    /// A window bound: ISO 8601, epoch milliseconds (digits alone, so 0 is 1970), or a
    /// duration before `now` (`24h`).
    package static func time(_ text: String, now: Int64) throws -> Int64 {
        if !text.isEmpty, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) { return try TimeText.milliseconds(text) }
        if let ago = try? DurationText.milliseconds(text, bareUnit: .refused) { return now - ago }
        if text.hasPrefix("-"), (try? DurationText.milliseconds(String(text.dropFirst()), bareUnit: .refused)) != nil {
            throw GeolocateError.usage("invalid time '\(text)': an age has no sign (\(text.dropFirst()) is \(text.dropFirst()) ago)")
        }
        return try TimeText.milliseconds(text)
    }

    /// What an export wrote.
    package struct Summary: Sendable, Equatable {
        /// Points (CSV rows) written.
        package var points = 0
        /// Records without a fix (a timeout), left out.
        package var withoutFix = 0
        /// Records in the window whose coordinates the policy withholds: left out of GPX and
        /// GeoJSON, CSV rows with empty coordinates.
        package var coordinatesWithheld = 0
    }

    /// The file `output` names (a symbolic link is written through, to the file it names),
    /// unless it is a file of the state directory or one of `protected`: a usage error, said
    /// before the input is opened, so a spool the export would refuse to read never hides it.
    /// - Throws: `GeolocateError.outputIsStateFile` or `.outputIsProtected` (64).
    package static func refuseOutput(_ output: String, stateDirectory: String, protected: [(path: String, what: String)]) throws -> String {
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: output)).map {
            $0.hasPrefix("/") ? $0 : URL(fileURLWithPath: output).deletingLastPathComponent().appendingPathComponent($0).path
        } ?? output
        try Exporter.refuseStateFile(target, output: output, stateDirectory: stateDirectory)
        var status = stat()
        if stat(target, &status) == 0 {
            for file in protected {
                var other = stat()
                if stat(file.path, &other) == 0, other.st_dev == status.st_dev, other.st_ino == status.st_ino {
                    throw GeolocateError.outputIsProtected(path: output, what: file.what)
                }
            }
        }
        return target
    }

    /// Writes the export to `output`: a path, written to a temporary file beside it and renamed
    /// into place when complete (a failed export leaves no partial file), or standard output.
    ///
    /// - Parameter stateDirectory: the state directory, none of whose files `output` may be.
    /// - Parameter temporary: holds the temporary file while it is written, for a signal
    ///   handler to remove (`PendingFile.abandon`).
    /// - Parameter protected: other files `output` may not be (the configuration, the
    ///   `--input` file), each with what it is, compared by device and inode.
    /// - Throws: `GeolocateError.outputIsStateFile` (64) for an output in the state directory,
    ///   `.unreadableInput` (65) for a line that is not a record,
    ///   `.fileNotWritable` (73) when the file cannot be written (a full disk),
    ///   `.outputFailed` (74) when standard output cannot take it.
    package func run(from input: Input, to output: String?, stateDirectory: String, temporary: PendingFile,
                     protected: [(path: String, what: String)] = []) throws -> Summary {
        guard let output, output != "-" else {
            let sink = ByteSink(fd: 1) { GeolocateError.outputFailed(reason: ErrorText.posix($0)) }
            return try write(from: input, to: sink)
        }
        func failure(_ code: Int32) -> GeolocateError { .fileNotWritable(path: output, reason: ErrorText.posix(code)) }
        let target = try Exporter.refuseOutput(output, stateDirectory: stateDirectory, protected: protected)
        var status = stat()
        let exists = stat(target, &status) == 0
        // A device or a FIFO (/dev/null, a pipe) is written as it is: renaming a file over
        // it would replace the device node.
        if exists, status.st_mode & S_IFMT != S_IFREG, status.st_mode & S_IFMT != S_IFDIR {
            let fd = open(target, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { throw failure(errno) }
            defer { close(fd) }
            return try write(from: input, to: ByteSink(fd: fd, failure: failure))
        }
        let url = URL(fileURLWithPath: target)
        let fd = temporary.create(url.deletingLastPathComponent().path + "/.\(url.lastPathComponent).XXXXXX")
        guard fd >= 0 else { throw failure(errno) }
        defer { close(fd) }
        do {
            // The mode a new file would get (0666 less the umask), or the one the file had.
            let mask = umask(0)
            umask(mask)
            fchmod(fd, exists ? status.st_mode & 0o7777 : 0o666 & ~mask)
            let summary = try write(from: input, to: ByteSink(fd: fd, failure: failure))
            guard fsync(fd) == 0 else { throw failure(errno) }
            guard temporary.commit(to: target) else { throw failure(errno) }
            return summary
        } catch {
            temporary.abandon()
            throw error
        }
    }

    /// Refuses an output that is the state directory, in it, or a file of it under another
    /// name (a hard link): the export would replace the spool, and every pending record with it.
    ///
    /// Paths are compared with their symbolic links resolved (`realpath`), so a link to the
    /// state directory or a relative path through it is seen for what it is.
    /// - Throws: `GeolocateError.outputIsStateFile` (64).
    static func refuseStateFile(_ target: String, output: String, stateDirectory: String) throws {
        // A state directory that does not exist holds nothing to lose.
        guard let state = resolved(stateDirectory) else { return }
        let url = URL(fileURLWithPath: target)
        let full = resolved(target) ?? resolved(url.deletingLastPathComponent().path).map { $0 + "/" + url.lastPathComponent }
        if let full, full == state || full.hasPrefix(state == "/" ? "/" : state + "/") {
            throw GeolocateError.outputIsStateFile(path: output, stateFile: full)
        }
        var file = stat()
        guard stat(target, &file) == 0, file.st_mode & S_IFMT == S_IFREG else { return }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: state)) ?? [] {
            var entry = stat()
            if stat(state + "/" + name, &entry) == 0, entry.st_dev == file.st_dev, entry.st_ino == file.st_ino {
                throw GeolocateError.outputIsStateFile(path: output, stateFile: state + "/" + name)
            }
        }
    }

    /// `path` with every symbolic link, `.` and `..` resolved; `nil` when it does not exist.
    private static func resolved(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }

    private func write(from input: Input, to sink: ByteSink) throws -> Summary {
        var summary = Summary()
        var trackOpen = false
        try sink.append(format.header)
        let take: (Record) throws -> Void = { record in
            guard let fix = record.fix else {
                // A record without a fix has no time to place in a window: counted only without one.
                if since == nil && until == nil { summary.withoutFix += 1 }
                return
            }
            if let since, fix.timestamp < since { return }
            if let until, fix.timestamp > until { return }
            let record = policy.applied(to: record)
            if !record.attributes.isSuperset(of: [.latitude, .longitude]) { summary.coordinatesWithheld += 1 }
            guard let point = format.point(record, index: summary.points) else { return }
            if format == .gpx && !trackOpen && !ExportFormat.isEvent(record) {
                try sink.append(ExportFormat.gpxTrackStart)
                trackOpen = true
            }
            try sink.append(point)
            summary.points += 1
        }
        switch input {
        case .spool(let spool):
            try spool.forEachExportable(since: since, until: until, eventsFirst: format == .gpx, take)
        case .nothing:
            break
        case .ndjson(let fd, let name) where format == .gpx:
            try Exporter.sorted(fd: fd, name: name, take)
        case .ndjson(let fd, let name):
            try Exporter.records(fd: fd, name: name, take)
        }
        if trackOpen { try sink.append(ExportFormat.gpxTrackEnd) }
        try sink.append(format.footer)
        try sink.flush()
        return summary
    }

    /// Calls `body` with each record of the NDJSON on `fd`, in input order.
    /// - Throws: `GeolocateError.unreadableInput` (65) for a line that is not a record.
    private static func records(fd: Int32, name: String, _ body: (Record) throws -> Void) throws {
        try NDJSONLines.read(fd: fd, name: name) { line, number in
            let record: Record
            do { record = try MosaicLine.record(from: line, recordedAt: 0) } catch let error as MosaicLine.Unreadable {
                throw GeolocateError.unreadableInput(reason: "\(name) line \(number) is not a geolocate record: \(error.reason)")
            }
            try body(record)
        }
    }

    /// Calls `body` with each record of the NDJSON on `fd` in GPX's order: events, then
    /// track's records, each by fix time (input order among equals).
    ///
    /// A stream cannot be read twice, and `track --stdout` interleaves logins with the track:
    /// the lines are buffered in a temporary SQLite database in the temporary directory
    /// (`$TMPDIR`), removed when done, so memory stays flat however long the input is.
    private static func sorted(fd: Int32, name: String, _ body: (Record) throws -> Void) throws {
        try LineSorter.sorted { keep in
            try NDJSONLines.read(fd: fd, name: name) { line, number in
                let record: Record
                do { record = try MosaicLine.record(from: line, recordedAt: 0) } catch let error as MosaicLine.Unreadable {
                    throw GeolocateError.unreadableInput(reason: "\(name) line \(number) is not a geolocate record: \(error.reason)")
                }
                try keep(line, ExportFormat.isEvent(record), record.fix?.timestamp)
            }
        } body: { line in
            // Read once already: it is a record.
            if let record = try? MosaicLine.record(from: line, recordedAt: 0) { try body(record) }
        }
    }
}

/// Bytes written to a descriptor in 64 KiB pieces.
final class ByteSink {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private let failure: (Int32) -> GeolocateError

    init(fd: Int32, failure: @escaping (Int32) -> GeolocateError) {
        self.fd = fd
        self.failure = failure
        buffer.reserveCapacity(1 << 16)
    }

    func append(_ text: String) throws {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { try flush() }
    }

    func flush() throws {
        var offset = 0
        while offset < buffer.count {
            let n = buffer.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { throw failure(n < 0 ? errno : EIO) }
            offset += n
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// The lines of a descriptor, read in 64 KiB pieces: a line is handed over as it completes.
enum NDJSONLines {
    /// The longest line taken: a record is under 4 KiB; anything longer is not one.
    static let maximumLength = 1 << 20

    /// Calls `body` with each non-empty line and its number.
    /// - Throws: `GeolocateError.unreadableInput` for a line over `maximumLength` or a read
    ///   error; what `body` throws.
    static func read(fd: Int32, name: String, _ body: (String, Int) throws -> Void) throws {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var number = 0
        func emit(_ bytes: ArraySlice<UInt8>) throws {
            number += 1
            var line = bytes
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { try body(String(decoding: line, as: UTF8.self), number) }
        }
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw GeolocateError.unreadableInput(reason: "\(name): \(ErrorText.posix(errno))") }
            if n == 0 { break }
            var start = 0
            for index in 0..<n where chunk[index] == UInt8(ascii: "\n") {
                if pending.isEmpty {
                    try emit(chunk[start..<index])
                } else {
                    pending += chunk[start..<index]
                    try emit(pending[...])
                    pending.removeAll(keepingCapacity: true)
                }
                start = index + 1
            }
            pending += chunk[start..<n]
            if pending.count > maximumLength {
                throw GeolocateError.unreadableInput(reason: "\(name) line \(number + 1) is longer than \(maximumLength) bytes")
            }
        }
        if !pending.isEmpty { try emit(pending[...]) }
    }
}
