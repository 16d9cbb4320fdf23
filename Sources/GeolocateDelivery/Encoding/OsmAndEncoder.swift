import GeolocateModel

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
