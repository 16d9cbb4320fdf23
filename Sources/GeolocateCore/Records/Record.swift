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
    /// A track record's `location_context`; `nil` on trigger records.
    public var context: LocationContext?
    /// The device that collected a track record, as far as `fields.*` allow.
    public var device: DeviceInfo?
    /// Where the fix is in words, as far as `privacy.precision` allows; `nil` when not looked up.
    public var address: Address?
    /// The fields the location object may carry (`privacy.precision` and
    /// `privacy.locationAttributeFilter`); every output format obeys it.
    public var attributes: LocationAttributes = .all

    public init(id: String = Record.newID(), action: String, triggeredAt: Int64,
                requestedMode: String, collectionMode: String, fix: Fix?, permissions: [Permission],
                origin: LocationOrigin?, fallbackReason: FallbackReason?, errorCode: LocationErrorCode,
                context: LocationContext? = nil, device: DeviceInfo? = nil) {
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
        self.context = context
        self.device = device
    }

    /// A random (version 4) UUID in lower case, made without Foundation's formatting, which
    /// costs more than the rest of a track record together.
    public static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<2).flatMap { _ in withUnsafeBytes(of: generator.next() as UInt64) { Array($0) } }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// `triggeredAt − recordTimestamp`, when there is a location; never negative: a fix
    /// stamped after "now" (a replayed log older than the stored fix, clock skew) has age 0.
    public var ageMilliseconds: Int64? { fix.map { max(0, triggeredAt.subtractingClamped($0.timestamp)) } }
}

/// Where a track record was taken relative to a stay (OpenLocate's `location_context`).
public enum LocationContext: String, Sendable, Codable {
    case regular
    /// The device has stayed within the visit radius for the visit duration.
    case visitEntry = "visit_entry"
    /// The device has left a visit.
    case visitExit = "visit_exit"
}

/// The Mosaic-style JSON object of SPEC §3.1: decimal strings, explicit nulls, fixed key order.
public struct MosaicRecord {
    public let record: Record

    public init(_ record: Record) { self.record = record }

    /// The record as one line of JSON, keys in the order of SPEC §3.1.
    public func jsonLine() -> String {
        var json = JSONObjectWriter()
        json.add("id", record.id)
        json.add("action", record.action)
        json.add("triggeredAt", record.triggeredAt)
        json.add("requestedMode", record.requestedMode)
        json.add("collectionMode", record.collectionMode)
        json.addRaw("location", record.fix.map { MosaicRecord.location($0, record: record) } ?? "null")
        json.add("locationSource", record.origin?.rawValue)
        json.add("ageMs", record.ageMilliseconds)
        json.add("fallbackReason", record.fallbackReason?.rawValue)
        json.add("errorCode", Int64(record.errorCode.rawValue))
        json.addIfPresent("context", record.context?.rawValue)
        json.addIfPresent("deviceId", record.device?.id)
        json.addIfPresent("deviceModel", record.device?.model)
        json.addIfPresent("osVersion", record.device?.osVersion)
        return json.finished()
    }

    /// The `location` object: coordinates with 7 decimals, other figures with 1 or 2, all
    /// strings, then the address parts; only the fields in `record.attributes`.
    static func location(_ fix: Fix, record: Record) -> String {
        let allowed = record.attributes
        var json = JSONObjectWriter()
        if allowed.contains(.latitude) { json.addDecimalIfPresent("latitude", fix.latitude, digits: 7) }
        if allowed.contains(.longitude) { json.addDecimalIfPresent("longitude", fix.longitude, digits: 7) }
        if allowed.contains(.accuracy) { json.addDecimalIfPresent("accuracy", fix.horizontalAccuracy, digits: 1) }
        if allowed.contains(.altitude) { json.addDecimalIfPresent("altitude", fix.altitudeHAE, digits: 1) }
        if allowed.contains(.provider) { json.add("provider", fix.provider.rawValue) }
        if allowed.contains(.permissions) { json.add("permissions", record.permissions.map(\.rawValue)) }
        if allowed.contains(.recordTimestamp) { json.add("recordTimestamp", fix.timestamp) }
        if allowed.contains(.fixMode) { json.add("fixMode", fix.mode.rawValue) }
        if allowed.contains(.speed) { json.addDecimalIfPresent("speed", fix.speed, digits: 2) }
        if allowed.contains(.course) { json.addDecimalIfPresent("course", fix.course, digits: 1) }
        if allowed.contains(.verticalAccuracy) { json.addDecimalIfPresent("verticalAccuracy", fix.verticalAccuracy, digits: 1) }
        if let address = record.address {
            if allowed.contains(.countryCode) { json.addIfPresent("countryCode", address.countryCode) }
            if allowed.contains(.district) { json.addIfPresent("district", address.district) }
            if allowed.contains(.city) { json.addIfPresent("city", address.city) }
            if allowed.contains(.street) { json.addIfPresent("street", address.street) }
            if allowed.contains(.streetNumber) { json.addIfPresent("streetNumber", address.streetNumber) }
        }
        return json.finished()
    }

    /// Fixed-point text without a negative zero, as `%.Nf` prints it (ties to even).
    static func decimal(_ value: Double, digits: Int) -> String {
        var bytes: [UInt8] = []
        JSONObjectWriter.appendDecimal(value, digits: digits, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}
