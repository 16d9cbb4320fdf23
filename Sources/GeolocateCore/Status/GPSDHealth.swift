import Foundation
import GeolocateDelivery

/// gpsd as `status` found it: whether it answered `?POLL;` within 1 s, its device, its fix.
package struct GPSDHealth: Sendable, Encodable {
    package var reachable: Bool
    package var device: String?
    /// `2D`, `3D`, or `nil` with no fix.
    package var fixMode: String?
    package var error: String?
    /// gpsd's release, from its VERSION greeting.
    package var release: String?
    /// What the receiver's health reports are worth through this gpsd: before 3.26 gpsd reports
    /// neither jamming nor the antenna's state, so records say `jamming: null` (unknown), and this
    /// says so rather than look like "not jammed"; `nil` from 3.26 on.
    package var receiverHealth: String?
    /// For a u-blox receiver: the UBX verdict messages it sent within a second (SPEC §15), or
    /// that it sent none, which leaves every verdict unknown; `nil` for other receivers.
    package var receiverVerdicts: String?

    package init(reachable: Bool, device: String? = nil, fixMode: String? = nil, error: String? = nil) {
        self.reachable = reachable
        self.device = device
        self.fixMode = fixMode
        self.error = error
    }

    /// `receiverHealth` for gpsd `release`: the words when it is older than 3.26.
    package static func receiverHealth(release: String?) -> String? {
        guard let release else { return nil }
        let parts = release.split(separator: ".").prefix(2).map { Int($0.prefix { $0.isNumber }) ?? 0 }
        guard parts.count == 2, parts[0] < 3 || (parts[0] == 3 && parts[1] < 26) else { return nil }
        return "jamming and antenna state not available (gpsd \(release) reports them from 3.26 on): records say jamming null, unknown"
    }

    /// `receiverVerdicts` from the UBX verdict messages seen (their names), for a u-blox receiver.
    package static func receiverVerdicts(seen: Set<String>) -> String {
        guard !seen.isEmpty else {
            return "none: the u-blox receiver sends no NAV-PVT, NAV-STATUS, NAV-SIG, SEC-SIG or SEC-OSNMA, so OSNMA, spoofing and jamming verdicts are unknown (REFERENCE: enabling them)"
        }
        return seen.sorted().joined(separator: ", ")
    }
}
