/// Which optional fields records carry: config `fields.*`, as OpenLocate's collecting-fields
/// configuration. Everything is collected unless switched off.
package struct RecordFields: Sendable, Equatable {
    package var course = true
    package var speed = true
    package var altitude = true
    package var horizontalAccuracy = true
    package var verticalAccuracy = true
    package var locationContext = true
    package var deviceId = true
    package var deviceModel = true
    package var osVersion = true
    package var isCharging = true
    package var wifiSsid = true
    package var wifiBssid = true
    package var carrierName = true

    package init() {}

    /// The config key of each flag, in the order `--help` lists them.
    package static var keys: [(name: String, flag: WritableKeyPath<RecordFields, Bool>)] {
        [
            ("course", \.course), ("speed", \.speed), ("altitude", \.altitude),
            ("horizontalAccuracy", \.horizontalAccuracy), ("verticalAccuracy", \.verticalAccuracy),
            ("locationContext", \.locationContext), ("deviceId", \.deviceId),
            ("deviceModel", \.deviceModel), ("osVersion", \.osVersion), ("isCharging", \.isCharging),
            ("wifiSsid", \.wifiSsid), ("wifiBssid", \.wifiBssid), ("carrierName", \.carrierName),
        ]
    }

    /// Whether records carry anything about the device.
    package var wantsDevice: Bool { deviceId || deviceModel || osVersion || isCharging || wifiSsid || wifiBssid || carrierName }

    /// The location figures these flags keep: all but those switched off.
    package var locationAttributes: LocationAttributes {
        var kept = LocationAttributes.all
        if !course { kept.remove(.course) }
        if !speed { kept.remove(.speed) }
        if !altitude { kept.remove(.altitude) }
        if !horizontalAccuracy { kept.remove(.accuracy) }
        if !verticalAccuracy { kept.remove(.verticalAccuracy) }
        return kept
    }
}
