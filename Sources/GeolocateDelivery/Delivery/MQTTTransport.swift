import Foundation
import GeolocateConfig

/// One record's message: its payload, and its record id, which MQTT 5 sends as the user
/// property `id` so that consumers deduplicate QoS 1 redeliveries without parsing payloads.
package struct MQTTMessage: Sendable, Equatable {
    package var id: String
    package var payload: [UInt8]

    package init(id: String, payload: [UInt8]) {
        self.id = id
        self.payload = payload
    }
}

/// What a broker did with messages published in order.
package struct MQTTOutcome: Sendable, Equatable {
    /// How many more messages, in publishing order, the broker acknowledged since the last
    /// outcome on this connection (QoS 1: PUBACK; QoS 2: PUBCOMP; QoS 0, which has no
    /// acknowledgement: written to the connection).
    package var acknowledged: Int
    /// Why the others were not, when some were not.
    package var failure: MQTTFailure?
    /// The version the connection speaks, when this call connected: 3.1.1 where the broker
    /// refused 5 (a CONNACK saying so, or a close before any CONNACK) and 3.1.1 then worked.
    package var connectedWith: MQTTVersion?

    package init(acknowledged: Int, failure: MQTTFailure? = nil, connectedWith: MQTTVersion? = nil) {
        self.acknowledged = acknowledged
        self.failure = failure
        self.connectedWith = connectedWith
    }
}

/// Why a broker did not take messages.
package enum MQTTFailure: Sendable, Equatable, Error {
    /// Unreachable, dropped, or too slow to acknowledge: try again later.
    case unreachable(String)
    /// The endpoint is wrong, not the records: credentials or TLS files refused, the topic
    /// not allowed (MQTT 5 says so in the PUBACK; 3.1.1 brokers acknowledge and drop). Its
    /// records stay pending and flush exits 78.
    case refused(String)

    /// Whether trying again later may succeed.
    package var isTemporary: Bool {
        if case .unreachable = self { return true }
        return false
    }
}

/// Publishes to MQTT brokers: the seam between delivery and the libmosquitto adapter.
package protocol MQTTTransport: Sendable {
    /// Publishes `messages` to `broker`'s topic after those of earlier calls, in order.
    ///
    /// With `awaitingAll`, it returns once the broker acknowledged every message published;
    /// without, as soon as few enough are unacknowledged for more to be published, so the
    /// connection never idles while the caller reads the next batch. A failure drops the
    /// connection and every unacknowledged message with it: the caller publishes those again.
    func publish(_ messages: [MQTTMessage], to broker: MQTTBroker, awaitingAll: Bool) async -> MQTTOutcome
    /// Disconnects from every broker cleanly: the end of a flush.
    func close() async
}
