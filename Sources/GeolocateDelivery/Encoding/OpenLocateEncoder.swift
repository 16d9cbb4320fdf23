import GeolocateModel

/// One OpenLocate location: numbers where Mosaic has decimal strings (with the same digits),
/// snake_case names, seconds for timestamps, `device_id` instead of advertising ids, and the
/// address parts geolocate adds (`country_code`, `district`, `city`, `street`, `street_number`).
///
/// A field that is withheld or unknown is left out, as OpenLocate's SDK leaves out what it
/// did not collect.
package enum OpenLocateEncoder: RecordEncoder {
    package static func write(_ record: Record, to json: inout JSONWriter) {
        let allowed = record.attributes
        let fix = record.fix
        json.beginObject()
        json.string("id", record.id)
        if let fix {
            if allowed.contains(.latitude) { json.numberIfPresent("latitude", fix.latitude, digits: 7) }
            if allowed.contains(.longitude) { json.numberIfPresent("longitude", fix.longitude, digits: 7) }
            if allowed.contains(.recordTimestamp) { json.integer("utc_timestamp", fix.timestamp / 1000) }
        }
        json.integer("utc_timestamp_received", record.triggeredAt / 1000)
        if let fix {
            if allowed.contains(.accuracy) { json.numberIfPresent("horizontal_accuracy", fix.horizontalAccuracy, digits: 1) }
            if allowed.contains(.verticalAccuracy) { json.numberIfPresent("vertical_accuracy", fix.verticalAccuracy, digits: 1) }
            if allowed.contains(.altitude) { json.numberIfPresent("altitude", fix.altitudeHAE, digits: 1) }
            if allowed.contains(.course) { json.numberIfPresent("course", fix.course, digits: 1) }
            if allowed.contains(.speed) { json.numberIfPresent("speed", fix.speed, digits: 2) }
        }
        json.stringIfPresent("location_context", record.context?.rawValue)
        if let fix, allowed.contains(.provider) { json.string("location_provider", fix.provider.rawValue) }
        json.string("action", record.action)
        json.stringIfPresent("device_id", record.device?.id)
        json.stringIfPresent("device_model", record.device?.model)
        json.stringIfPresent("os_version", record.device?.osVersion)
        json.boolIfPresent("is_charging", record.device?.context.isCharging)
        json.stringIfPresent("wifi_ssid", record.device?.context.wifiSsid)
        json.stringIfPresent("wifi_bssid", record.device?.context.wifiBssid)
        json.stringIfPresent("carrier_name", record.device?.context.carrierName)
        if fix != nil, let address = record.address {
            for part in Address.parts where allowed.contains(part.attribute) {
                json.stringIfPresent(part.snakeCaseName, address[keyPath: part.value])
            }
        }
        if let signals = record.signals { SignalsEncoder.write(signals, style: .openLocate, to: &json) }
        if let policy = record.policy { SignalsEncoder.write(policy, style: .openLocate, to: &json) }
        json.endObject()
    }
}
