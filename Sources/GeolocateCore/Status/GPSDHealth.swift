import Foundation
import GeolocateDelivery

/// gpsd as `status` found it: whether it answered `?POLL;` within 1 s, its device, its fix.
package struct GPSDHealth: Sendable, Encodable {
    package var reachable: Bool
    package var device: String?
    /// `2D`, `3D`, or `nil` with no fix.
    package var fixMode: String?
    package var error: String?

    package init(reachable: Bool, device: String? = nil, fixMode: String? = nil, error: String? = nil) {
        self.reachable = reachable
        self.device = device
        self.fixMode = fixMode
        self.error = error
    }
}
