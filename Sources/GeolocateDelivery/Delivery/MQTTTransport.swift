import Foundation
import GeolocateConfig

/// What a broker did with messages published in order.
package struct MQTTOutcome: Sendable, Equatable {
    /// How many more messages, in publishing order, the broker acknowledged since the last
    /// outcome on this connection (QoS 1: PUBACK; QoS 2: PUBCOMP; QoS 0, which has no
    /// acknowledgement: written to the connection).
    package var acknowledged: Int
    /// Why the others were not, when some were not.
    package var failure: MQTTFailure?

    package init(acknowledged: Int, failure: MQTTFailure? = nil) {
        self.acknowledged = acknowledged
        self.failure = failure
    }
}

/// Why a broker did not take messages.
package enum MQTTFailure: Sendable, Equatable, Error {
    /// Unreachable, dropped, or too slow to acknowledge: try again later.
    case unreachable(String)
    /// The endpoint is wrong, not the records: credentials or TLS files refused, the topic
    /// not allowed. Its records stay pending and flush exits 78.
    case refused(String)
}

/// Publishes to MQTT brokers: the seam between delivery and the libmosquitto adapter.
package protocol MQTTTransport: Sendable {
    /// Publishes `messages` to `broker`'s topic after those of earlier calls, in order.
    ///
    /// With `awaitingAll`, it returns once the broker acknowledged every message published;
    /// without, as soon as few enough are unacknowledged for more to be published, so the
    /// connection never idles while the caller reads the next batch. A failure drops the
    /// connection and every unacknowledged message with it: the caller publishes those again.
    func publish(_ messages: [[UInt8]], to broker: MQTTBroker, awaitingAll: Bool) async -> MQTTOutcome
    /// Disconnects from every broker cleanly: the end of a flush.
    func close() async
}
