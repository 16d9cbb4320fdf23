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
