/// What OpenLocate collects about a phone's surroundings, read the Linux way (SPEC §10.3):
/// whether it is charging, the Wi-Fi it is connected to, and its mobile carrier.
///
/// Each is `nil` when the device has no such thing (no battery or mains supply, no Wi-Fi
/// connection, no modem) or `fields.*` switched it off; reading never fails a record.
package struct DeviceContext: Sendable, Equatable {
    package var isCharging: Bool?
    package var wifiSsid: String?
    package var wifiBssid: String?
    package var carrierName: String?

    package init(isCharging: Bool? = nil, wifiSsid: String? = nil, wifiBssid: String? = nil, carrierName: String? = nil) {
        self.isCharging = isCharging
        self.wifiSsid = wifiSsid
        self.wifiBssid = wifiBssid
        self.carrierName = carrierName
    }

    package var isEmpty: Bool { self == DeviceContext() }
}
