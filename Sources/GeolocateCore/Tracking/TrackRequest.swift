import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel

/// `geolocate track` as the command line asked for it; `nil` fields were not given.
package struct TrackRequest: Sendable {
    package var policy: TrackPolicy
    package var source: SourceSpecifier?
    package var replaySpeed: ReplaySpeed
    /// `--permission`: the permissions granted for this run (`[]` for none), instead of config `permissions`.
    package var permission: [Permission]?
    /// `--stdout`: NDJSON records on standard output.
    package var toStdout: Bool
    /// `--format`: how each `--stdout` line writes its record (the spool keeps the record).
    package var format: RecordFormat = .mosaic
    /// Who sends, for the formats that name the device (owntracks, osmand).
    package var sender = Sender()
    /// Not `--no-spool`.
    package var toSpool: Bool

    package init(policy: TrackPolicy = TrackPolicy(), source: SourceSpecifier? = nil, replaySpeed: ReplaySpeed = .asap,
                 permission: [Permission]? = nil, toStdout: Bool = false, toSpool: Bool = true, format: RecordFormat = .mosaic) {
        self.format = format
        self.policy = policy
        self.source = source
        self.replaySpeed = replaySpeed
        self.permission = permission
        self.toStdout = toStdout
        self.toSpool = toSpool
    }
}
