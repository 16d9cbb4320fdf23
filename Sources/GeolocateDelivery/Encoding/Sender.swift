/// Who the records are sent as: the formats that name the device take it from here, not from
/// the record, whose device fields `fields.*` may withhold.
package struct Sender: Sendable, Equatable {
    /// The install's device id (the `device-id` file of the state directory): OsmAnd's `id`,
    /// `{deviceId}` in a topic, and with `role` MQTT's client id.
    package var deviceID: String?
    /// Which of the device's processes sends: its MQTT client id is the device id and the
    /// role (`ID-flush`), so the gate, a track and a flush running at once never take over
    /// each other's connection (a broker drops the older of two with one client id).
    package var role: Role = .flush
    /// OwnTracks' `tid` (`owntracks.tid`).
    package var trackerID: String?
    /// What signs the `jwt` format's tokens; `nil` where no endpoint takes them.
    package var signer: TokenSigner?

    package init(deviceID: String? = nil, trackerID: String? = nil, signer: TokenSigner? = nil) {
        self.deviceID = deviceID
        self.trackerID = trackerID
        self.signer = signer
    }

    /// A process that sends records.
    package enum Role: String, Sendable, Equatable {
        case flush, track, gate, trigger

        /// Whether it publishes again what a dropped connection left unacknowledged, and so
        /// has a session worth resuming: flush and track retry; trigger and the gate send one
        /// message and spool it when the broker fails them.
        package var retries: Bool { self == .flush || self == .track }
    }

    /// The MQTT client id: the device id and the role.
    package var clientID: String? { deviceID.map { "\($0)-\(role.rawValue)" } }
}
