import Foundation
import GRDB
import GeolocateConfig
import GeolocateModel
import NMEA

/// How a record is stored in the spool: one typed column per field (schema version 2).
///
/// The `records`, `deadLetters` and `delivered` tables all carry these columns, so a record
/// moves between them in SQL, never through Swift or text. A location field the record's `attributes`
/// withhold is stored `NULL`: the spool keeps nothing the privacy settings kept out.
package enum SpoolColumns {
    /// The spool's schema version (`PRAGMA user_version`): 1 kept each record as its Mosaic
    /// JSON line, 2 keeps typed columns, 3 adds the signals, 4 the policy decision, 5 the
    /// device context, 6 the table of delivered records kept for export (`spool.keepDelivered`),
    /// 7 when each record was spooled (`records.spooledAt`) and the recent expiries, 8 each
    /// endpoint's last error kind, 9 the login hook's subject, 10 the receiver's fix quality,
    /// 11 its jamming indicator and antenna state, 12 its own verdicts through UBX.
    package static let schemaVersion = 12

    /// One column of a record, in the order of `definitions`, of every SELECT of a record and of
    /// the values `forEachValue(of:_:)` gives: a read names its column, never a position by hand.
    ///
    /// Each case's name is its column's. A column is added at the end, with the schema version
    /// that adds it (`addMissingColumns`); `forEachValue(of:_:)` and `record(from:at:)` switch over
    /// every case, so the compiler asks for its value and the spool test for its round trip.
    package enum Column: Int, CaseIterable, Sendable {
        case id, recordedAt, action, triggeredAt, requestedMode, collectionMode
        case fixTimestamp, latitude, longitude, fixMode, altitudeHAE, altitudeMSL, speed, course
        case horizontalAccuracy, verticalAccuracy, provider, permissions, attributes
        case origin, fallbackReason, errorCode, context, deviceId, deviceModel, osVersion
        case countryCode, district, city, street, streetNumber
        // Schema version 3: signals. `signalFlags` is NULL for a record without them.
        case signalFlags, previousTimestamp, previousDistance, previousCountry, impliedSpeed, clockSkewMs
        case satellitesUsed, satellitesMeasured, cn0Mean, cn0StdDev, signalReasons
        // Schema version 4: the policy decision. `policyDecision` is NULL for a record without one.
        case policyDecision, policyZone, policyRule, policyCountry, policyBoundaryDistance
        // Schema version 5: the device context.
        case isCharging, wifiSsid, wifiBssid, carrierName
        // Schema version 9: the login hook's subject.
        case subjectUser, subjectService, subjectRemoteHost, subjectTty
        // Schema version 10: the receiver's word on its fix.
        case fixQuality
        // Schema version 11: the receiver's jamming indicator and antenna state, as gpsd reports them.
        case jamming, antenna, antennaPower
        // Schema version 12: the receiver's own verdicts through UBX (SPEC §15), 0/1/NULL.
        case gnssAuthenticated, receiverSpoofing, receiverJamming, osnmaReplay, osnmaStatus, authenticatedSatellites

        /// The column's SQL type, as `CREATE TABLE` and `ALTER TABLE … ADD COLUMN` give it.
        package var sqlType: String {
            switch self {
            case .id: "TEXT NOT NULL"
            case .recordedAt: "INTEGER NOT NULL"
            case .action, .requestedMode, .collectionMode: "TEXT NOT NULL DEFAULT ''"
            case .triggeredAt, .errorCode: "INTEGER NOT NULL DEFAULT 0"
            case .fixTimestamp, .attributes, .signalFlags, .previousTimestamp, .clockSkewMs, .satellitesUsed,
                 .satellitesMeasured, .isCharging, .jamming, .gnssAuthenticated, .receiverSpoofing, .receiverJamming,
                 .osnmaReplay, .authenticatedSatellites:
                "INTEGER"
            case .latitude, .longitude, .altitudeHAE, .altitudeMSL, .speed, .course, .horizontalAccuracy,
                 .verticalAccuracy, .previousDistance, .impliedSpeed, .cn0Mean, .cn0StdDev, .policyBoundaryDistance:
                "REAL"
            case .fixMode, .provider, .permissions, .origin, .fallbackReason, .context, .deviceId, .deviceModel,
                 .osVersion, .countryCode, .district, .city, .street, .streetNumber, .previousCountry,
                 .signalReasons, .policyDecision, .policyZone, .policyRule, .policyCountry, .wifiSsid, .wifiBssid,
                 .carrierName, .subjectUser, .subjectService, .subjectRemoteHost, .subjectTty, .fixQuality, .antenna, .antennaPower,
                 .osnmaStatus:
                "TEXT"
            }
        }
    }

    /// Every column, in table order: `Column.allCases` made once, not on each record.
    package static let columns = Column.allCases

    /// Each column's name and SQL type, in table order.
    package static let definitions: [(name: String, type: String)] = columns.map { ("\($0)", $0.sqlType) }

    /// `id, recordedAt, action, …`: the column list for `INSERT` and `SELECT`.
    package static let names = definitions.map(\.name).joined(separator: ", ")

    /// An SQL expression naming the first column whose value is not of its type (text or a
    /// BLOB in a number, an id that is not text), else `NULL`: SQLite keeps whatever another
    /// program writes, and its typed reads would turn such a value into 0.
    ///
    /// `x >= ''` holds for text and BLOBs only (SQLite orders numbers before text): one
    /// comparison a column, where `typeof(x) IN (…)` built a lookup per row and cost a third
    /// of a flush. Other text columns are read as they are.
    package static let wrongTypeSQL: String = {
        let numbers = definitions.filter { !$0.type.hasPrefix("TEXT") }.map { "WHEN \($0.name) >= '' THEN '\($0.name)'" }
        return "CASE WHEN typeof(id) <> 'text' THEN 'id' " + numbers.joined(separator: " ") + " END"
    }()

    /// `wrongTypeSQL, id, recordedAt, …`: a record's columns after the name of its first
    /// column of the wrong type, as `checkedRecord(from:at:)` reads them.
    package static let checkedNames = "\(wrongTypeSQL), \(names)"

    /// The record of `row` selected by `checkedNames` from `start` on, and why it cannot be
    /// sent as it is (`damage(of:wrongType:)`), or `nil`.
    package static func checkedRecord(from row: Row, at start: Int) -> (record: GeolocateModel.Record, damage: String?) {
        let wrongType: String? = row.hasNull(atIndex: start) ? nil : row[start] as String
        let record = record(from: row, at: start + 1)
        // A coordinate the record's attributes say it has, but NULL, would read as 0°.
        var missing: String?
        if record.fix != nil {
            for (column, attribute) in [(Column.latitude, LocationAttributes.latitude), (.longitude, .longitude)]
            where missing == nil && record.attributes.contains(attribute) && row.hasNull(atIndex: start + 1 + column.rawValue) {
                missing = "its \(column) is missing"
            }
        }
        return (record, damage(of: record, wrongType: wrongType) ?? missing)
    }

    /// Why `record`, read from the spool, cannot be sent as it is, or `nil`: a column of the
    /// wrong type (`wrongType`), no id, or a position or time no fix can have.
    package static func damage(of record: GeolocateModel.Record, wrongType: String?) -> String? {
        if let wrongType { return "\(wrongType) is not of its type" }
        if record.id.isEmpty { return "it has no id" }
        guard let fix = record.fix else { return nil }
        if !FixLimits.isValidPosition(latitude: fix.latitude, longitude: fix.longitude) { return "its position is out of range" }
        if !(FixLimits.earliestTimestamp...TimeText.latestMilliseconds).contains(fix.timestamp) { return "its time is out of range" }
        return nil
    }

    /// `?, ?, …`, one per column.
    package static let placeholders = Array(repeating: "?", count: definitions.count).joined(separator: ", ")

    /// A value as SQLite stores it.
    package enum StoredValue {
        case null, integer(Int64), real(Double), text(String)

        init(_ value: String?) { self = value.map { .text($0) } ?? .null }
        init(_ value: Double?) { self = value.map { .real($0) } ?? .null }
        init(_ value: Int64?) { self = value.map { .integer($0) } ?? .null }
        init<Integer: BinaryInteger>(_ value: Integer?) { self = value.map { .integer(Int64($0)) } ?? .null }
    }

    /// Calls `body` with the value of each of `record`'s columns, in the order of `definitions`.
    package static func forEachValue(of record: GeolocateModel.Record, _ body: (StoredValue) throws -> Void) rethrows {
        let allowed = record.attributes
        let fix = record.fix
        let address = record.address
        let signals = record.signals
        let satellites = signals?.satellites
        let policy = record.policy
        let device = record.device
        let subject = record.subject
        func shown<T>(_ attribute: LocationAttributes, _ value: T?) -> T? { allowed.contains(attribute) ? value : nil }
        // Withheld signal figures were removed by `OutputPolicy` before.
        func value(_ column: Column) -> StoredValue {
            switch column {
            case .id: StoredValue(record.id)
            case .recordedAt: StoredValue(fix?.timestamp ?? record.triggeredAt)
            case .action: StoredValue(record.action)
            case .triggeredAt: StoredValue(record.triggeredAt)
            case .requestedMode: StoredValue(record.requestedMode)
            case .collectionMode: StoredValue(record.collectionMode)
            case .fixTimestamp: StoredValue(fix?.timestamp)
            case .latitude: StoredValue(shown(.latitude, fix?.latitude))
            case .longitude: StoredValue(shown(.longitude, fix?.longitude))
            case .fixMode: StoredValue(shown(.fixMode, fix?.mode.rawValue))
            case .altitudeHAE: StoredValue(shown(.altitude, fix?.altitudeHAE))
            case .altitudeMSL: StoredValue(shown(.altitude, fix?.altitudeMSL))
            case .speed: StoredValue(shown(.speed, fix?.speed))
            case .course: StoredValue(shown(.course, fix?.course))
            case .horizontalAccuracy: StoredValue(shown(.accuracy, fix?.horizontalAccuracy))
            case .verticalAccuracy: StoredValue(shown(.verticalAccuracy, fix?.verticalAccuracy))
            case .provider: StoredValue(shown(.provider, fix?.provider.rawValue))
            case .permissions: StoredValue(shown(.permissions, record.permissions.map(\.rawValue).joined(separator: ",")))
            case .attributes: StoredValue(Int64(allowed.rawValue))
            case .origin: StoredValue(record.origin?.rawValue)
            case .fallbackReason: StoredValue(record.fallbackReason?.rawValue)
            case .errorCode: StoredValue(Int64(record.errorCode.rawValue))
            case .context: StoredValue(record.context?.rawValue)
            case .deviceId: StoredValue(device?.id)
            case .deviceModel: StoredValue(device?.model)
            case .osVersion: StoredValue(device?.osVersion)
            case .countryCode: StoredValue(shown(.countryCode, address?.countryCode))
            case .district: StoredValue(shown(.district, address?.district))
            case .city: StoredValue(shown(.city, address?.city))
            case .street: StoredValue(shown(.street, address?.street))
            case .streetNumber: StoredValue(shown(.streetNumber, address?.streetNumber))
            case .signalFlags: StoredValue(signals?.flags)
            case .previousTimestamp: StoredValue(signals?.previous?.recordTimestamp)
            case .previousDistance: StoredValue(signals?.previous?.distance)
            case .previousCountry: StoredValue(signals?.previous?.countryCode)
            case .impliedSpeed: StoredValue(signals?.impliedSpeed)
            case .clockSkewMs: StoredValue(signals?.clockSkewMilliseconds)
            case .satellitesUsed: StoredValue(satellites?.used.map { Int64($0) })
            case .satellitesMeasured: StoredValue(satellites.map { Int64($0.measured) })
            case .cn0Mean: StoredValue(satellites?.cn0Mean)
            case .cn0StdDev: StoredValue(satellites?.cn0StdDev)
            case .signalReasons: StoredValue(signals?.reasons.joined(separator: "\n"))
            case .policyDecision: StoredValue(policy?.decision.rawValue)
            case .policyZone: StoredValue(policy?.zone)
            case .policyRule: StoredValue(policy?.rule.rawValue)
            case .policyCountry: StoredValue(policy?.country)
            case .policyBoundaryDistance: StoredValue(policy?.boundaryDistance)
            case .isCharging: StoredValue(device?.context.isCharging.map { $0 ? Int64(1) : 0 })
            case .wifiSsid: StoredValue(device?.context.wifiSsid)
            case .wifiBssid: StoredValue(device?.context.wifiBssid)
            case .carrierName: StoredValue(device?.context.carrierName)
            case .subjectUser: StoredValue(subject?.user)
            case .subjectService: StoredValue(subject?.service)
            case .subjectRemoteHost: StoredValue(subject?.remoteHost)
            case .subjectTty: StoredValue(subject?.tty)
            case .fixQuality: StoredValue(shown(.fixMode, fix?.quality?.rawValue))
            case .jamming: StoredValue(signals?.jamming.map { Int64($0) })
            case .antenna: StoredValue(signals?.antenna?.rawValue)
            case .antennaPower: StoredValue(signals?.antennaPower?.rawValue)
            case .gnssAuthenticated: StoredValue(signals?.gnssAuthenticated.map { $0 ? Int64(1) : 0 })
            case .receiverSpoofing: StoredValue(signals?.receiverSpoofing.map { $0 ? Int64(1) : 0 })
            case .receiverJamming: StoredValue(signals?.receiverJamming.map { $0 ? Int64(1) : 0 })
            case .osnmaReplay: StoredValue(signals?.osnmaReplay.map { $0 ? Int64(1) : 0 })
            case .osnmaStatus: StoredValue(signals?.osnmaStatus?.rawValue)
            case .authenticatedSatellites: StoredValue(signals?.authenticatedSatellites.map { Int64($0) })
            }
        }
        for column in columns { try body(value(column)) }
    }

    /// The record stored in `row` from column `start` on (in the order of `definitions`).
    ///
    /// Values are read as stored: the spool is written only by geolocate, and a value it could
    /// not have written (an unknown mode or provider) reads as the field's withheld form.
    /// `row` must come from a cursor (`Row.fetchCursor`), whose typed reads are SQLite's own;
    /// a copied row would trap on a value of the wrong type.
    package static func record(from row: Row, at start: Int) -> GeolocateModel.Record {
        // Typed reads straight from the statement: GRDB's generic decoding costs more than the
        // rest of reading a batch. SQLite converts a value of another type (which only another
        // program could have written) as CAST would.
        func text(_ column: Column) -> String? {
            let index = start + column.rawValue
            return row.hasNull(atIndex: index) ? nil : row[index] as String
        }
        func real(_ column: Column) -> Double? {
            let index = start + column.rawValue
            return row.hasNull(atIndex: index) ? nil : row[index] as Double
        }
        func integer(_ column: Column) -> Int64? {
            let index = start + column.rawValue
            return row.hasNull(atIndex: index) ? nil : row[index] as Int64
        }
        /// The non-empty parts of a stored list, split on its UTF-8 bytes: splitting on
        /// Characters (grapheme breaking) cost a twentieth of an MQTT flush's CPU.
        func parts(of list: String?, between separator: Unicode.Scalar) -> [String] {
            guard let list else { return [] }
            return list.utf8.split(separator: UInt8(ascii: separator)).map { String(Substring($0)) }
        }
        let attributes = integer(.attributes).map { LocationAttributes(rawValue: UInt32(truncatingIfNeeded: $0)) } ?? .all
        // Figures out of range (speed, course, accuracy, altitude) read as unknown, as a live
        // fix's would; the position and time are checked by `damage(of:wrongType:)`.
        var fix = integer(.fixTimestamp).map { timestamp in
            Fix(timestamp: timestamp, latitude: real(.latitude) ?? 0, longitude: real(.longitude) ?? 0,
                mode: text(.fixMode).flatMap(Fix.Mode.init(rawValue:)) ?? .twoD,
                altitudeHAE: FixLimits.altitude(real(.altitudeHAE)), altitudeMSL: FixLimits.altitude(real(.altitudeMSL)),
                speed: FixLimits.speed(real(.speed)), course: FixLimits.course(real(.course)),
                horizontalAccuracy: FixLimits.errorFigure(real(.horizontalAccuracy)),
                verticalAccuracy: FixLimits.errorFigure(real(.verticalAccuracy)),
                provider: text(.provider).flatMap(Fix.Provider.init(rawValue:)) ?? .gpsd)
        }
        fix?.quality = text(.fixQuality).flatMap(Fix.Quality.init(rawValue:))
        var device = DeviceInfo(id: text(.deviceId), model: text(.deviceModel), osVersion: text(.osVersion))
        device.context = DeviceContext(isCharging: integer(.isCharging).map { $0 != 0 }, wifiSsid: text(.wifiSsid),
                                       wifiBssid: text(.wifiBssid), carrierName: text(.carrierName))
        var record = GeolocateModel.Record(
            id: text(.id) ?? "", action: text(.action) ?? "", triggeredAt: integer(.triggeredAt) ?? 0,
            requestedMode: text(.requestedMode) ?? "", collectionMode: text(.collectionMode) ?? "", fix: fix,
            permissions: parts(of: text(.permissions), between: ",").compactMap(Permission.init(rawValue:)),
            origin: text(.origin).flatMap(LocationOrigin.init(rawValue:)),
            fallbackReason: text(.fallbackReason).flatMap(FallbackReason.init(rawValue:)),
            errorCode: integer(.errorCode).flatMap { LocationErrorCode(rawValue: Int($0)) } ?? LocationErrorCode.none,
            context: text(.context).flatMap(LocationContext.init(rawValue:)),
            device: device == DeviceInfo(id: nil, model: nil, osVersion: nil) ? nil : device)
        let address = Address(countryCode: text(.countryCode), district: text(.district), city: text(.city),
                              street: text(.street), streetNumber: text(.streetNumber))
        record.address = fix == nil || address == Address() ? nil : address
        record.attributes = attributes
        if fix != nil, let flags = integer(.signalFlags) {
            var signals = Signals()
            signals.setFlags(flags)
            signals.previous = integer(.previousTimestamp).map {
                Signals.Previous(recordTimestamp: $0, distance: real(.previousDistance), countryCode: text(.previousCountry))
            }
            signals.impliedSpeed = real(.impliedSpeed)
            signals.clockSkewMilliseconds = integer(.clockSkewMs)
            signals.satellites = integer(.satellitesMeasured).map { measured in
                SatelliteSummary(used: integer(.satellitesUsed).map { Int(clamping: $0) }, measured: Int(clamping: measured),
                                 cn0Mean: real(.cn0Mean), cn0StdDev: real(.cn0StdDev))
            }
            signals.reasons = parts(of: text(.signalReasons), between: "\n")
            signals.jamming = integer(.jamming).flatMap { (0...255).contains($0) ? Int($0) : nil }
            signals.antenna = text(.antenna).flatMap(Fix.Antenna.init(rawValue:))
            signals.antennaPower = text(.antennaPower).flatMap(Fix.AntennaPower.init(rawValue:))
            signals.gnssAuthenticated = integer(.gnssAuthenticated).map { $0 != 0 }
            signals.receiverSpoofing = integer(.receiverSpoofing).map { $0 != 0 }
            signals.receiverJamming = integer(.receiverJamming).map { $0 != 0 }
            signals.osnmaReplay = integer(.osnmaReplay).map { $0 != 0 }
            signals.osnmaStatus = text(.osnmaStatus).flatMap(ReceiverVerdict.OSNMAStatus.init(rawValue:))
            signals.authenticatedSatellites = integer(.authenticatedSatellites).flatMap { (0...63).contains($0) ? Int($0) : nil }
            record.signals = signals
        }
        if let decision = text(.policyDecision).flatMap(PolicyResult.Decision.init(rawValue:)),
           let rule = text(.policyRule).flatMap(PolicyResult.Rule.init(stored:)) {
            record.policy = PolicyResult(decision: decision, zone: text(.policyZone), rule: rule,
                                         country: text(.policyCountry), boundaryDistance: real(.policyBoundaryDistance))
        }
        let subject = Subject(user: text(.subjectUser), service: text(.subjectService), remoteHost: text(.subjectRemoteHost),
                              tty: text(.subjectTty))
        record.subject = subject == Subject() ? nil : subject
        return record
    }

    /// Adds the columns of `definitions` that `db`'s tables lack (each new one NULL in the
    /// rows already there), then sets `version`: the migration of each later schema version.
    package static func addMissingColumns(_ db: Database, version: Int) throws {
        for table in ["records", "deadLetters", "delivered"] where try db.tableExists(table) {
            let existing = Set(try db.columns(in: table).map(\.name))
            for (name, type) in definitions where !existing.contains(name) {
                try db.execute(sql: "ALTER TABLE \(table) ADD COLUMN \(name) \(type)")
            }
        }
        try db.execute(sql: "PRAGMA user_version = \(version)")
    }

    /// The records of a version-1 `table` (`records` or `deadLetters`) by rowid.
    /// - Throws: `MosaicLine.Unreadable` naming the first one that cannot be read.
    package static func version1Records(in table: String, _ db: Database) throws -> [(Int64, GeolocateModel.Record)] {
        // Dead letters of the earliest versions have no recordedAt: the time they were refused.
        let recordedAt = table == "records" ? "recordedAt" : "COALESCE(recordedAt, at)"
        let key = table == "records" ? "seq" : "endpoint, seq"
        var records: [(Int64, GeolocateModel.Record)] = []
        let rows = try Row.fetchCursor(db, sql: "SELECT rowid AS rowNumber, \(recordedAt) AS recordedAt, body FROM \(table) ORDER BY \(key)")
        while let row = try rows.next() {
            guard let rowid: Int64 = row.lenient("rowNumber"), let recordedAt: Int64 = row.lenient("recordedAt"),
                  let body: String = row.lenient("body") else {
                throw MosaicLine.Unreadable(reason: "a row of \(table) without a time or a record")
            }
            records.append((rowid, try MosaicLine.record(from: body, recordedAt: recordedAt)))
        }
        return records
    }

    /// Whether `db` is a version-1 spool, and every record in it can be read: checked before
    /// any migration runs, because each migration commits on its own, and one that fails
    /// half-way must leave the file for the version that wrote it.
    /// - Throws: `MosaicLine.Unreadable` naming the first record that cannot be read.
    package static func checkVersion1(_ db: Database) throws {
        guard try db.tableExists("records"), try db.columns(in: "records").contains(where: { $0.name == "body" }) else { return }
        for table in ["records", "deadLetters"] where try db.tableExists(table) {
            _ = try version1Records(in: table, db)
        }
    }

    /// Converts a spool of schema version 1 in place: each `body` (a Mosaic line) of `records`
    /// and `deadLetters` becomes typed columns, then the `body` columns go. `seq`, the
    /// AUTOINCREMENT counter and every cursor stay as they were.
    /// - Throws: `MosaicLine.Unreadable` naming the first record that cannot be read; the
    ///   migration's transaction is then rolled back and the spool left as it was.
    package static func migrateVersion1(_ db: Database) throws {
        for table in ["records", "deadLetters"] {
            let existing = Set(try db.columns(in: table).map(\.name))
            for (name, type) in definitions where !existing.contains(name) {
                try db.execute(sql: "ALTER TABLE \(table) ADD COLUMN \(name) \(type)")
            }
            let assignments = definitions.map { "\($0.name) = ?" }.joined(separator: ", ")
            let update = try db.makeStatement(sql: "UPDATE \(table) SET \(assignments) WHERE rowid = ?")
            for (rowid, record) in try version1Records(in: table, db) {
                try RecordStatement.execute(update, record: record, trailing: [StoredValue(rowid)])
            }
            try db.execute(sql: "ALTER TABLE \(table) DROP COLUMN body")
        }
        try db.execute(sql: "PRAGMA user_version = \(schemaVersion)")
    }
}

extension Row {
    /// The value of `column` as `T`, or `nil` when it is NULL or of another type: what
    /// another program wrote into a state file is never trusted to have our types, and GRDB's
    /// own subscript traps on a mismatch.
    package func lenient<T: DatabaseValueConvertible>(_ column: String) -> T? {
        guard hasColumn(column) else { return nil }
        return T.fromDatabaseValue(self[column] as DatabaseValue)
    }
}
