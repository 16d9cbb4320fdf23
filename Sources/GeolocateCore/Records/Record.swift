import Foundation

/// One risk-event record (SPEC §3.1), the unit geolocate prints, spools and sends.
public struct Record: Sendable, Equatable {
    /// A UUID that never changes, so receivers can drop duplicates.
    public var id: String
    public var action: String
    /// Milliseconds since 1970 when the event was decided ("now").
    public var triggeredAt: Int64
    /// The mode asked for (`default` or an explicit mode).
    public var requestedMode: String
    /// The mode that was applied after resolving `default`.
    public var collectionMode: String
    public var fix: Fix?
    /// The permissions in force for this record.
    public var permissions: [Permission]
    public var origin: LocationOrigin?
    public var fallbackReason: FallbackReason?
    public var errorCode: LocationErrorCode

    public init(id: String = UUID().uuidString.lowercased(), action: String, triggeredAt: Int64,
                requestedMode: String, collectionMode: String, fix: Fix?, permissions: [Permission],
                origin: LocationOrigin?, fallbackReason: FallbackReason?, errorCode: LocationErrorCode) {
        self.id = id
        self.action = action
        self.triggeredAt = triggeredAt
        self.requestedMode = requestedMode
        self.collectionMode = collectionMode
        self.fix = fix
        self.permissions = permissions
        self.origin = origin
        self.fallbackReason = fallbackReason
        self.errorCode = errorCode
    }

    /// `triggeredAt − recordTimestamp`, when there is a location.
    public var ageMilliseconds: Int64? { fix.map { triggeredAt - $0.timestamp } }
}

/// The Mosaic-style JSON object of SPEC §3.1: decimal strings, explicit nulls, fixed key order.
public struct MosaicRecord: Encodable {
    public let record: Record

    public init(_ record: Record) { self.record = record }

    private enum Keys: String, CodingKey {
        case id, action, triggeredAt, requestedMode, collectionMode, location, locationSource, ageMs,
             fallbackReason, errorCode
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(record.id, forKey: .id)
        try container.encode(record.action, forKey: .action)
        try container.encode(record.triggeredAt, forKey: .triggeredAt)
        try container.encode(record.requestedMode, forKey: .requestedMode)
        try container.encode(record.collectionMode, forKey: .collectionMode)
        if let fix = record.fix {
            try container.encode(MosaicLocation(fix: fix, permissions: record.permissions), forKey: .location)
        } else {
            try container.encodeNil(forKey: .location)
        }
        try container.encode(record.origin?.rawValue, forKey: .locationSource)
        try container.encode(record.ageMilliseconds, forKey: .ageMs)
        try container.encode(record.fallbackReason?.rawValue, forKey: .fallbackReason)
        try container.encode(record.errorCode.rawValue, forKey: .errorCode)
    }

    /// One line of JSON.
    public func jsonLine() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }
}

/// The `location` object: coordinates with 7 decimals, other figures with 1 or 2, all strings.
struct MosaicLocation: Encodable {
    let fix: Fix
    let permissions: [Permission]

    private enum Keys: String, CodingKey {
        case latitude, longitude, accuracy, altitude, provider, permissions, recordTimestamp, fixMode,
             speed, course, verticalAccuracy
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(Decimal.string(fix.latitude, digits: 7), forKey: .latitude)
        try container.encode(Decimal.string(fix.longitude, digits: 7), forKey: .longitude)
        try container.encodeIfPresent(fix.horizontalAccuracy.map { Decimal.string($0, digits: 1) }, forKey: .accuracy)
        try container.encodeIfPresent(fix.altitudeHAE.map { Decimal.string($0, digits: 1) }, forKey: .altitude)
        try container.encode(fix.provider.rawValue, forKey: .provider)
        try container.encode(permissions.map(\.rawValue), forKey: .permissions)
        try container.encode(fix.timestamp, forKey: .recordTimestamp)
        try container.encode(fix.mode.rawValue, forKey: .fixMode)
        try container.encodeIfPresent(fix.speed.map { Decimal.string($0, digits: 2) }, forKey: .speed)
        try container.encodeIfPresent(fix.course.map { Decimal.string($0, digits: 1) }, forKey: .course)
        try container.encodeIfPresent(fix.verticalAccuracy.map { Decimal.string($0, digits: 1) },
                                      forKey: .verticalAccuracy)
    }

    private enum Decimal {
        static func string(_ value: Double, digits: Int) -> String {
            let text = String(format: "%.\(digits)f", value)
            return text.hasPrefix("-") && Double(text) == 0 ? String(text.dropFirst()) : text
        }
    }
}
