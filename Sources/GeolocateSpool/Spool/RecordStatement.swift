import GRDB
import GRDBSQLite
import GeolocateModel

/// Runs a prepared statement whose parameters are a record's columns and then `trailing`
/// values, binding each with SQLite's own calls: the one file of the spool that touches
/// SQLite's C API.
///
/// GRDB's `StatementArguments` boxes and converts every one of a record's 60 values on each
/// insert, which cost three times the insert itself (`make bench`, spool row).
enum RecordStatement {
    /// SQLite copies each text it is given (`SQLITE_TRANSIENT`), so no string has to outlive the call.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    /// Binds `record`'s columns, then `trailing`, to `statement` and runs it once.
    /// - Throws: GRDB's `DatabaseError` when SQLite fails (a full disk, a read-only file).
    static func execute(_ statement: Statement, record: GeolocateModel.Record, trailing: [SpoolColumns.StoredValue]) throws {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        var index: Int32 = 1
        var code = SQLITE_OK
        func bind(_ value: SpoolColumns.StoredValue) {
            guard code == SQLITE_OK else { return }
            switch value {
            case .null: code = sqlite3_bind_null(handle, index)
            case .integer(let integer): code = sqlite3_bind_int64(handle, index, integer)
            case .real(let real): code = sqlite3_bind_double(handle, index, real)
            case .text(var text):
                code = text.withUTF8 { sqlite3_bind_text(handle, index, $0.baseAddress, Int32($0.count), transient) }
            }
            index += 1
        }
        SpoolColumns.forEachValue(of: record, bind)
        trailing.forEach(bind)
        if code == SQLITE_OK { code = sqlite3_step(handle) }
        // Reset at once, so the statement holds no lock and no copy of the record.
        sqlite3_reset(handle)
        guard code == SQLITE_DONE else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(sqlite3_db_handle(handle))),
                                sql: statement.sql)
        }
    }
}
