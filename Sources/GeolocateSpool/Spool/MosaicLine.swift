import Foundation
import GRDB
import GeolocateConfig
import GeolocateModel
import NMEA

/// A record as its Mosaic JSON line (SPEC §3.1): how schema version 1 of the spool kept it,
/// and what `track --stdout` hands to `export --input`.
///
/// Read back, as records, only when geolocate migrates such a spool and when a user pipes
/// records into an export (the state files it reads back, the last known location and the
/// previous report, are JSON of their own types).
package enum MosaicLine {
    /// A line that is not a record geolocate wrote.
    package struct Unreadable: Error, CustomStringConvertible {
        package var reason: String
        package var description: String { "a record of an earlier version cannot be read: \(reason)" }
    }

    private struct Line: Decodable {
        package var id: String
        package var action: String
        package var triggeredAt: Int64
        package var requestedMode: String
        package var collectionMode: String
        package var location: Location?
        package var locationSource: String?
        package var fallbackReason: String?
        package var errorCode: Int
        package var context: String?
        package var deviceId: String?
        package var deviceModel: String?
        package var osVersion: String?
    }

    private struct Location: Decodable {
        package var latitude: String?
        package var longitude: String?
        package var accuracy: String?
        package var altitude: String?
        package var provider: String?
        package var permissions: [String]?
        package var recordTimestamp: Int64?
        package var fixMode: String?
        package var speed: String?
        package var course: String?
        package var verticalAccuracy: String?
        package var countryCode: String?
        package var district: String?
        package var city: String?
        package var street: String?
        package var streetNumber: String?
    }

    /// What is wrong with a line, in a few words: which field is missing or of the wrong type.
    private static func describe(_ error: Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, _)?:
            return "no \"\(key.stringValue)\""
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
            return "\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" is not of its type"
        case .dataCorrupted?:
            return "not JSON"
        default:
            return ErrorText.plain(error)
        }
    }

    /// The record `body` holds; `recordedAt` is the time the spool kept beside the line, the
    /// fix's time when the line withheld `recordTimestamp`.
    /// - Throws: `Unreadable` for anything but a record geolocate wrote.
    package static func record(from body: String, recordedAt: Int64) throws -> GeolocateModel.Record {
        let line: Line
        do { line = try JSONDecoder().decode(Line.self, from: Data(body.utf8)) } catch {
            throw Unreadable(reason: "not a record (\(describe(error)))")
        }
        func value<T: RawRepresentable>(_ raw: T.RawValue?, _ name: String) throws -> T? {
            guard let raw else { return nil }
            guard let value = T(rawValue: raw) else { throw Unreadable(reason: "\(name) \(raw) in record \(line.id)") }
            return value
        }
        func number(_ text: String?, _ name: String) throws -> Double? {
            guard let text else { return nil }
            guard NumberText.isDecimal(text), let value = Double(text), value.isFinite else {
                throw Unreadable(reason: "\(name) '\(text)' in record \(line.id)")
            }
            return value
        }
        var record = GeolocateModel.Record(
            id: line.id, action: line.action, triggeredAt: line.triggeredAt, requestedMode: line.requestedMode,
            collectionMode: line.collectionMode, fix: nil, permissions: [],
            origin: try value(line.locationSource, "locationSource"),
            fallbackReason: try value(line.fallbackReason, "fallbackReason"),
            errorCode: try value(line.errorCode, "errorCode") ?? LocationErrorCode.none,
            context: try value(line.context, "context"),
            device: line.deviceId == nil && line.deviceModel == nil && line.osVersion == nil
                ? nil : DeviceInfo(id: line.deviceId, model: line.deviceModel, osVersion: line.osVersion))
        guard let location = line.location else { return record }
        // A field the line left out was withheld, or unknown: either way it stays out.
        var shown: LocationAttributes = []
        func note<T>(_ value: T?, _ attribute: LocationAttributes) -> T? {
            if value != nil { shown.insert(attribute) }
            return value
        }
        let latitude = note(try number(location.latitude, "latitude"), .latitude)
        let longitude = note(try number(location.longitude, "longitude"), .longitude)
        guard FixLimits.isValidPosition(latitude: latitude ?? 0, longitude: longitude ?? 0) else {
            throw Unreadable(reason: "a position out of range in record \(line.id)")
        }
        let mode: Fix.Mode? = note(try value(location.fixMode, "fixMode"), .fixMode)
        let provider: Fix.Provider? = note(try value(location.provider, "provider"), .provider)
        _ = note(location.recordTimestamp, .recordTimestamp)
        let permissions = note(location.permissions, .permissions) ?? []
        record.permissions = try permissions.map { try value($0, "permission") ?? .fine }
        record.fix = Fix(timestamp: location.recordTimestamp ?? recordedAt, latitude: latitude ?? 0, longitude: longitude ?? 0, mode: mode ?? .twoD,
                         altitudeHAE: note(try number(location.altitude, "altitude"), .altitude),
                         speed: note(try number(location.speed, "speed"), .speed),
                         course: note(try number(location.course, "course"), .course),
                         horizontalAccuracy: note(try number(location.accuracy, "accuracy"), .accuracy),
                         verticalAccuracy: note(try number(location.verticalAccuracy, "verticalAccuracy"), .verticalAccuracy),
                         provider: provider ?? .gpsd)
        let address = Address(countryCode: note(location.countryCode, .countryCode), district: note(location.district, .district),
                              city: note(location.city, .city), street: note(location.street, .street),
                              streetNumber: note(location.streetNumber, .streetNumber))
        record.address = address == Address() ? nil : address
        record.attributes = shown
        return record
    }
}
