import GeolocateModel

/// The OwnTracks JSON location message (`_type` `location`), as OwnTracks Recorder and Home
/// Assistant's OwnTracks integration take it over MQTT and HTTP: numbers, whole metres, km/h
/// and epoch seconds.
///
/// Field by field (owntracks.org/booklet/tech/json): `lat`, `lon` (degrees, 7 decimals);
/// `acc` and `vac` (metres, rounded); `alt` (metres above mean sea level, rounded, as the apps
/// report it: the ellipsoid height of the other formats differs by the geoid, up to 100 m);
/// `vel` (km/h, rounded); `cog` (degrees true, rounded); `tst` (the fix's time, epoch
/// seconds); `created_at` (when the record was made); `tid` (`owntracks.tid`); `t` (`t` for
/// track's timer, `u` for a trigger's event); `bs` (1 unplugged, 2 charging), `SSID`,
/// `BSSID`. A record without a location has no message (`EndpointFormat.carries`).
package enum OwnTracksEncoder {
    package static func write(_ record: Record, sender: Sender, to json: inout JSONWriter) {
        let allowed = record.attributes
        json.beginObject()
        json.string("_type", "location")
        if let fix = record.fix {
            if allowed.contains(.latitude) { json.numberIfPresent("lat", fix.latitude, digits: 7) }
            if allowed.contains(.longitude) { json.numberIfPresent("lon", fix.longitude, digits: 7) }
            if allowed.contains(.accuracy) { json.integerIfPresent("acc", WholeNumber.rounded(fix.horizontalAccuracy)) }
            if allowed.contains(.altitude) { json.integerIfPresent("alt", WholeNumber.rounded(fix.altitudeMSL)) }
            if allowed.contains(.verticalAccuracy) { json.integerIfPresent("vac", WholeNumber.rounded(fix.verticalAccuracy)) }
            if allowed.contains(.speed) { json.integerIfPresent("vel", WholeNumber.rounded(fix.speed.map { $0 * 3.6 })) }
            if allowed.contains(.course) { json.integerIfPresent("cog", WholeNumber.rounded(fix.course)) }
            if allowed.contains(.recordTimestamp) { json.integer("tst", fix.timestamp / 1000) }
        }
        json.integer("created_at", record.triggeredAt / 1000)
        json.stringIfPresent("tid", sender.trackerID)
        json.string("t", record.context == nil ? "u" : "t")
        if let charging = record.device?.context.isCharging { json.integer("bs", charging ? 2 : 1) }
        json.stringIfPresent("SSID", record.device?.context.wifiSsid)
        json.stringIfPresent("BSSID", record.device?.context.wifiBssid)
        json.endObject()
    }
}
