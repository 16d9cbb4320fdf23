import GeolocateModel

/// The Mosaic-style record of SPEC §3.1: decimal strings, explicit nulls, fixed key order.
package enum MosaicEncoder: RecordEncoder {
    package static func write(_ record: Record, to json: inout JSONWriter) {
        json.beginObject()
        json.string("id", record.id)
        json.string("action", record.action)
        json.integer("triggeredAt", record.triggeredAt)
        json.string("requestedMode", record.requestedMode)
        json.string("collectionMode", record.collectionMode)
        if let fix = record.fix { writeLocation(fix, of: record, to: &json) } else { json.null("location") }
        json.string("locationSource", record.origin?.rawValue)
        json.integer("ageMs", record.ageMilliseconds)
        json.string("fallbackReason", record.fallbackReason?.rawValue)
        json.integer("errorCode", Int64(record.errorCode.rawValue))
        json.stringIfPresent("context", record.context?.rawValue)
        if let subject = record.subject { writeSubject(subject, to: &json) }
        json.stringIfPresent("deviceId", record.device?.id)
        json.stringIfPresent("deviceModel", record.device?.model)
        json.stringIfPresent("osVersion", record.device?.osVersion)
        json.boolIfPresent("isCharging", record.device?.context.isCharging)
        json.stringIfPresent("wifiSsid", record.device?.context.wifiSsid)
        json.stringIfPresent("wifiBssid", record.device?.context.wifiBssid)
        json.stringIfPresent("carrierName", record.device?.context.carrierName)
        if let signals = record.signals { SignalsEncoder.write(signals, style: .mosaic, to: &json) }
        if let policy = record.policy { SignalsEncoder.write(policy, style: .mosaic, to: &json) }
        json.endObject()
    }

    /// The `subject` object of a login hook's record: the values PAM gave, absent ones left out.
    package static func writeSubject(_ subject: Subject, to json: inout JSONWriter) {
        json.beginObject("subject")
        json.stringIfPresent("user", subject.user)
        json.stringIfPresent("service", subject.service)
        json.stringIfPresent("remoteHost", subject.remoteHost)
        json.stringIfPresent("tty", subject.tty)
        json.endObject()
    }

    /// The `location` object: coordinates with 7 decimals, other figures with 1 or 2, all
    /// strings, then the address parts; only the fields in `record.attributes`.
    private static func writeLocation(_ fix: Fix, of record: Record, to json: inout JSONWriter) {
        let allowed = record.attributes
        json.beginObject("location")
        if allowed.contains(.latitude) { json.decimalStringIfPresent("latitude", fix.latitude, digits: 7) }
        if allowed.contains(.longitude) { json.decimalStringIfPresent("longitude", fix.longitude, digits: 7) }
        if allowed.contains(.accuracy) { json.decimalStringIfPresent("accuracy", fix.horizontalAccuracy, digits: 1) }
        if allowed.contains(.altitude) { json.decimalStringIfPresent("altitude", fix.altitudeHAE, digits: 1) }
        if allowed.contains(.provider) { json.string("provider", fix.provider.rawValue) }
        if allowed.contains(.permissions) { json.strings("permissions", record.permissions.map(\.rawValue)) }
        if allowed.contains(.recordTimestamp) { json.integer("recordTimestamp", fix.timestamp) }
        if allowed.contains(.fixMode) { json.string("fixMode", fix.mode.rawValue) }
        // The receiver's word on its fix, shown with the fix's mode (the `fixMode` attribute).
        if allowed.contains(.fixMode) { json.stringIfPresent("fixQuality", fix.quality?.rawValue) }
        if allowed.contains(.speed) { json.decimalStringIfPresent("speed", fix.speed, digits: 2) }
        if allowed.contains(.course) { json.decimalStringIfPresent("course", fix.course, digits: 1) }
        if allowed.contains(.verticalAccuracy) { json.decimalStringIfPresent("verticalAccuracy", fix.verticalAccuracy, digits: 1) }
        if let address = record.address {
            for part in Address.parts where allowed.contains(part.attribute) {
                json.stringIfPresent(part.name, address[keyPath: part.value])
            }
        }
        json.endObject()
    }
}
