import GeolocateConfig
import GeolocateModel
import GeolocateSpool

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

/// Traccar's OsmAnd protocol: one request per record, its fields as query parameters
/// (traccar.org/osmand).
///
/// `id` is the install's device id (`Sender.deviceID`): Traccar needs one to file the point
/// under, whatever `fields.deviceId` says. `lat`, `lon` (degrees, 7 decimals), `timestamp`
/// (the fix's time, epoch seconds), `altitude` (metres above the WGS84 ellipsoid, as Android
/// reports it, 1 decimal), `speed` (knots, which Traccar's decoder assumes, 2 decimals),
/// `bearing` (degrees true, 1 decimal), `accuracy` (metres, 1 decimal).
package enum OsmAndEncoder {
    /// The query, without the `?`: `id=…&lat=…&lon=…`.
    package static func query(_ record: Record, sender: Sender) -> String {
        var items: [(String, String)] = []
        if let id = sender.deviceID { items.append(("id", id)) }
        let allowed = record.attributes
        if let fix = record.fix {
            func add(_ name: String, _ attribute: LocationAttributes, _ value: Double?, digits: Int) {
                if allowed.contains(attribute), let value, value.isFinite { items.append((name, JSONWriter.decimal(value, digits: digits))) }
            }
            add("lat", .latitude, fix.latitude, digits: 7)
            add("lon", .longitude, fix.longitude, digits: 7)
            if allowed.contains(.recordTimestamp) { items.append(("timestamp", String(fix.timestamp / 1000))) }
            add("altitude", .altitude, fix.altitudeHAE, digits: 1)
            add("speed", .speed, fix.speed.map { $0 * 3600 / 1852 }, digits: 2)
            add("bearing", .course, fix.course, digits: 1)
            add("accuracy", .accuracy, fix.horizontalAccuracy, digits: 1)
        }
        return items.map { "\($0.0)=\(QueryText.escaped($0.1))" }.joined(separator: "&")
    }
}

/// Who the records are sent as: the formats that name the device take it from here, not from
/// the record, whose device fields `fields.*` may withhold.
package struct Sender: Sendable, Equatable {
    /// The install's device id (the `device-id` file of the state directory): OsmAnd's `id`,
    /// MQTT's client id and `{deviceId}` in a topic.
    package var deviceID: String?
    /// OwnTracks' `tid` (`owntracks.tid`).
    package var trackerID: String?
    /// What signs the `jwt` format's tokens; `nil` where no endpoint takes them.
    package var signer: TokenSigner?

    package init(deviceID: String? = nil, trackerID: String? = nil, signer: TokenSigner? = nil) {
        self.deviceID = deviceID
        self.trackerID = trackerID
        self.signer = signer
    }
}

/// Whole numbers for the formats that want them: OwnTracks' metres, km/h and degrees.
package enum WholeNumber {
    /// `value` rounded half away from zero, when finite and within ±2^53.
    package static func rounded(_ value: Double?) -> Int64? {
        guard let value, value.isFinite, abs(value) < 9_007_199_254_740_992 else { return nil }
        return Int64(value.rounded())
    }
}

/// Query-string text.
package enum QueryText {
    /// `text` percent-encoded for a query value: everything but RFC 3986's unreserved characters.
    package static func escaped(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".unicodeScalars)
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 0x0F)])
            }
        }
        return out
    }
}
