import Foundation
import GRDB
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

/// Lines read once and given back in another order: kept in a temporary SQLite database in the
/// temporary directory (`$TMPDIR`), removed when done, so memory stays flat however many
/// lines there are (`export --input` of a long `track --stdout`).
package enum LineSorter {
    /// Calls `fill` with a function that keeps one line under its key, then `body` with each
    /// line: the `first` ones before the rest, each group by `time` (none first), lines of
    /// equal keys in the order they were kept.
    /// - Throws: `GeolocateError.fileNotWritable` when the temporary database cannot be made
    ///   or written; whatever `fill` and `body` throw.
    package static func sorted(fill: (_ keep: (_ line: String, _ first: Bool, _ time: Int64?) throws -> Void) throws -> Void,
                               body: (String) throws -> Void) throws {
        var template = Array((FileManager.default.temporaryDirectory.path + "/geolocate-export.XXXXXX").utf8CString)
        guard mkdtemp(&template) != nil else {
            throw GeolocateError.fileNotWritable(path: FileManager.default.temporaryDirectory.path, reason: ErrorText.posix(errno))
        }
        let directory = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let queue = try DatabaseQueue(path: directory + "/sort.sqlite")
            try queue.write { db in
                try db.execute(sql: "CREATE TABLE lines (line INTEGER PRIMARY KEY, first INTEGER NOT NULL, time INTEGER, text TEXT NOT NULL)")
                let insert = try db.makeStatement(sql: "INSERT INTO lines (first, time, text) VALUES (?, ?, ?)")
                try fill { line, first, time in try insert.execute(arguments: [first ? 1 : 0, time, line]) }
            }
            try queue.read { db in
                let rows = try String.fetchCursor(db, sql: "SELECT text FROM lines ORDER BY first DESC, time, line")
                while let line = try rows.next() { try body(line) }
            }
        } catch let error as DatabaseError {
            throw GeolocateError.fileNotWritable(path: directory, reason: error.message ?? "\(error.resultCode)")
        }
    }
}
