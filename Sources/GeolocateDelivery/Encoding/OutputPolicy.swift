import GeolocateConfig
import GeolocateModel
import GeolocateSpool

/// What any output may show of a record: the fields `privacy.precision` and
/// `privacy.locationAttributeFilter` allow, and those `fields.*` have not switched off (SPEC §4, §5).
///
/// Every record is limited by the policy in force where it is made, before it is printed,
/// posted or spooled, and again by the policy in force when flush sends it: a record spooled
/// under a wider policy goes out under the narrower one, never the other way round, because a
/// field left out at capture is not kept anywhere.
package struct OutputPolicy: Sendable, Equatable {
    /// The location fields allowed: the precision's, narrowed by the attribute filter.
    package var attributes: LocationAttributes
    /// `fields.*`.
    package var fields: RecordFields

    package init(attributes: LocationAttributes = .all, fields: RecordFields = RecordFields()) {
        self.attributes = attributes
        self.fields = fields
    }

    /// The policy of `settings`.
    package init(settings: Settings) {
        self.init(attributes: settings.privacy.attributes, fields: settings.fields)
    }

    /// Shows everything the record has.
    package static let unrestricted = OutputPolicy()

    /// The location fields `record` may show: what it was made with, this policy's, and the
    /// figures `fields.*` keeps.
    package func locationAttributes(of record: Record) -> LocationAttributes {
        record.attributes.intersection(attributes).intersection(fields.locationAttributes)
    }

    /// `record` with only what this policy allows: the values it withholds are gone, not just
    /// hidden, so what is spooled keeps nothing the policy kept out.
    package func applied(to record: Record) -> Record {
        // Nothing to take away: a record already limited where it was made is printed as it is.
        if self == .unrestricted { return record }
        var record = record
        let allowed = locationAttributes(of: record)
        record.attributes = allowed
        if var fix = record.fix {
            if !allowed.contains(.altitude) { fix.altitudeHAE = nil; fix.altitudeMSL = nil }
            if !allowed.contains(.speed) { fix.speed = nil }
            if !allowed.contains(.course) { fix.course = nil }
            if !allowed.contains(.accuracy) { fix.horizontalAccuracy = nil }
            if !allowed.contains(.verticalAccuracy) { fix.verticalAccuracy = nil }
            record.fix = fix
        }
        if let address = record.address { record.address = address.limited(to: allowed) }
        // Distances and speeds between reports tell where the device is: only with coordinates.
        if !allowed.isSuperset(of: [.latitude, .longitude]) {
            record.signals = record.signals?.withoutFigures(keepingCountry: allowed.contains(.countryCode))
            record.policy?.boundaryDistance = nil
        }
        if !allowed.contains(.countryCode) { record.policy?.country = nil }
        if !fields.locationContext { record.context = nil }
        if var device = record.device {
            if !fields.deviceId { device.id = nil }
            if !fields.deviceModel { device.model = nil }
            if !fields.osVersion { device.osVersion = nil }
            if !fields.isCharging { device.context.isCharging = nil }
            if !fields.wifiSsid { device.context.wifiSsid = nil }
            if !fields.wifiBssid { device.context.wifiBssid = nil }
            if !fields.carrierName { device.context.carrierName = nil }
            record.device = device == DeviceInfo(id: nil, model: nil, osVersion: nil) ? nil : device
        }
        return record
    }
}
