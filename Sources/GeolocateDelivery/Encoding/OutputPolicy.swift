import GeolocateConfig
import GeolocateModel

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
        var record = record
        apply(to: &record)
        return record
    }

    /// `applied(to:)` in place, for the record pipeline, which changes one record step by step.
    package func apply(to record: inout Record) {
        // Nothing to take away: a record already limited where it was made is printed as it is.
        if self == .unrestricted { return }
        let allowed = locationAttributes(of: record)
        record.attributes = allowed
        if record.fix != nil {
            if !allowed.contains(.altitude) { record.fix?.altitudeHAE = nil; record.fix?.altitudeMSL = nil }
            if !allowed.contains(.speed) { record.fix?.speed = nil }
            if !allowed.contains(.course) { record.fix?.course = nil }
            if !allowed.contains(.accuracy) { record.fix?.horizontalAccuracy = nil }
            if !allowed.contains(.verticalAccuracy) { record.fix?.verticalAccuracy = nil }
        }
        if let address = record.address { record.address = address.limited(to: allowed) }
        // Distances and speeds between reports tell where the device is: only with coordinates.
        if !allowed.isSuperset(of: [.latitude, .longitude]) {
            record.signals = record.signals?.withoutFigures(keepingCountry: allowed.contains(.countryCode))
            record.policy?.boundaryDistance = nil
        }
        if !allowed.contains(.countryCode) { record.policy?.country = nil }
        if !fields.locationContext { record.context = nil }
        if record.device != nil {
            if !fields.deviceId { record.device?.id = nil }
            if !fields.deviceModel { record.device?.model = nil }
            if !fields.osVersion { record.device?.osVersion = nil }
            if !fields.isCharging { record.device?.context.isCharging = nil }
            if !fields.wifiSsid { record.device?.context.wifiSsid = nil }
            if !fields.wifiBssid { record.device?.context.wifiBssid = nil }
            if !fields.carrierName { record.device?.context.carrierName = nil }
            if record.device == DeviceInfo(id: nil, model: nil, osVersion: nil) { record.device = nil }
        }
    }
}
