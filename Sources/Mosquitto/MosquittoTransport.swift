import CMosquitto
import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

/// MQTT through libmosquitto: the only file that touches its C types.
///
/// One connection at a time, kept from one `publish` to the next and closed by `close()`:
/// its client id is the device id, and a broker drops the older of two connections with one
/// id. libmosquitto runs without a thread of its own: every call, and so every callback, runs
/// on one serial queue, driven by `mosquitto_loop`, and every wait has a deadline.
///
/// MQTT 5 by default (SPEC §11): libmosquitto takes the broker's Receive Maximum from its
/// CONNACK as the most messages on the wire unacknowledged, each message carries its record
/// id as user property `id`, and a PUBACK reason code of 0x80 or more is a refusal, never an
/// acknowledgement. A broker that refuses 5 (CONNACK "unsupported protocol version", or a
/// close before any CONNACK) is connected to again at once with 3.1.1.
///
/// With a Session Expiry Interval (`endpoints.NAME.sessionExpiry`; QoS 2's default), a
/// connection that drops is resumed in its session on the same handle: libmosquitto sends
/// again what was in flight with its packet ids, which the broker knows, so a QoS 2 message is
/// not delivered twice. Each process starts its session clean (it cannot know the packet ids
/// a killed one left) and ends it when it closes.
package final class MosquittoTransport: MQTTTransport, @unchecked Sendable {
    // @unchecked: `session` is only touched on `queue`.
    private let queue = DispatchQueue(label: "geolocate.mosquitto")
    private var session: Session?
    /// Messages are handed to libmosquitto in chunks of this many, so a huge batch is not
    /// queued all at once.
    private static let chunk = 1_000
    /// A `publish` that does not await every acknowledgement returns once at most this many
    /// messages are unacknowledged: enough to keep the connection busy while the caller reads
    /// and marks a batch, and far below the 65,535 message ids, so none repeats in flight.
    private static let window = 1_000
    /// Messages on the wire unacknowledged at once, at QoS 1: the rest wait in libmosquitto's
    /// queue and go as acknowledgements come in. At QoS 2 over MQTT 5 it is libmosquitto's
    /// default, 20, lowered to the broker's Receive Maximum. Over 3.1.1 a broker says no limit,
    /// and mosquitto answers a QoS 2 message over its `max_inflight_messages` with a PUBREC
    /// and drops it (10 of every 20 lost at a limit of 10): one at a time is the only window
    /// that no broker's limit is under.
    private static func inflight(qos: Int, version: MQTTVersion) -> Int32 {
        switch (qos, version) {
        case (2, .v5): 20
        case (2, .v311): 1
        default: 100
        }
    }

    private static let libraryReady: Void = { _ = mosquitto_lib_init() }()

    /// What the broker's answers are timed on.
    private let elapsed: MonotonicClock

    package init(elapsed: MonotonicClock) {
        _ = MosquittoTransport.libraryReady
        self.elapsed = elapsed
    }

    package func publish(_ messages: [MQTTMessage], to broker: MQTTBroker, awaitingAll: Bool) async -> MQTTOutcome {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.publishNow(messages, to: broker, awaitingAll: awaitingAll)) }
        }
    }

    package func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.session?.disconnect()
                self.session = nil
                continuation.resume()
            }
        }
    }

    private func publishNow(_ messages: [MQTTMessage], to broker: MQTTBroker, awaitingAll: Bool) -> MQTTOutcome {
        var messages = messages[...]
        if let session, session.lost, session.broker == broker, session.canResume(with: messages) {
            switch session.resume() {
            case .resumed:
                // What was in flight goes again from libmosquitto, with its packet ids: only
                // what follows it is published here.
                messages = messages.dropFirst(session.unacknowledged)
            case .withoutSession:
                session.disconnect()
                self.session = nil
            case .failed(let failure):
                // Kept for the next try: the broker may be back with the session by then.
                return MQTTOutcome(acknowledged: session.countAcknowledged(), failure: failure)
            }
        }
        if let session, session.broker != broker || session.lost {
            let acknowledged = session.countAcknowledged()
            let unacknowledged = session.unacknowledged
            session.disconnect()
            self.session = nil
            // What it still had in flight is lost with it, and is the caller's to publish again.
            if unacknowledged > 0 { return MQTTOutcome(acknowledged: acknowledged, failure: .unreachable("the broker closed the connection")) }
        }
        // Nothing to publish and no connection: nothing is unacknowledged either.
        if messages.isEmpty && session == nil { return MQTTOutcome(acknowledged: 0) }
        var connectedWith: MQTTVersion?
        if session == nil {
            var result = Session.connect(to: broker, version: broker.version, inflight: MosquittoTransport.inflight(qos: broker.qos, version: broker.version),
                                         elapsed: elapsed)
            if broker.version == .v5, case .failure(.version5Refused) = result {
                result = Session.connect(to: broker, version: .v311, inflight: MosquittoTransport.inflight(qos: broker.qos, version: .v311), elapsed: elapsed)
            }
            switch result {
            case .success(let connected):
                session = connected
                connectedWith = connected.version
            case .failure(let failure):
                return MQTTOutcome(acknowledged: 0, failure: failure.reported)
            }
        }
        var acknowledged = 0
        var start = messages.startIndex
        repeat {
            guard let session else { break }
            let end = min(messages.endIndex, start + MosquittoTransport.chunk)
            let last = end == messages.endIndex
            let outcome = session.publish(messages[start..<end], leaving: last && awaitingAll ? 0 : MosquittoTransport.window)
            acknowledged += outcome.acknowledged
            if let failure = outcome.failure {
                // A session worth resuming is kept for the caller's next try.
                if session.keepsSession && failure.isTemporary {
                    session.setAside()
                } else {
                    session.disconnect()
                    self.session = nil
                }
                return MQTTOutcome(acknowledged: acknowledged, failure: failure, connectedWith: connectedWith)
            }
            start = end
        } while start < messages.endIndex
        return MQTTOutcome(acknowledged: acknowledged, connectedWith: connectedWith)
    }
}

/// Why a connection was not made.
private enum ConnectFailure: Error {
    case failed(MQTTFailure)
    /// The broker refused MQTT 5, or closed the connection before any CONNACK: worth one
    /// try with 3.1.1, and said as `failure` when there is none.
    case version5Refused(MQTTFailure)

    var reported: MQTTFailure {
        switch self {
        case .failed(let failure), .version5Refused(let failure): failure
        }
    }
}

/// One connection to a broker and what its callbacks reported.
private final class Session {
    /// The broker as the caller named it (its `version` the one asked for first).
    let broker: MQTTBroker
    /// The version this connection speaks.
    let version: MQTTVersion
    private let handle: OpaquePointer
    /// The CONNACK's return code, once it came.
    private var connack: Int32?
    /// Set when the connection dropped.
    private(set) var lost = false
    /// Whether the connection has a session the broker keeps after a drop (MQTT 5 with a
    /// Session Expiry Interval), so `resume()` may carry on with what is in flight.
    let keepsSession: Bool
    /// The CONNACK's "session present": the broker resumed a session.
    private var sessionPresent = false
    /// The broker answered a message's release with "packet identifier not found": it lost
    /// the session, and what is in flight must be published anew.
    private var sessionForgotten = false
    /// The ids of the messages published and not yet counted as acknowledged, in publishing
    /// order from `head`, and their records' ids.
    private var published: [Int32] = []
    private var publishedRecords: [String] = []
    private var head = 0
    /// The message ids the broker acknowledged that are not yet counted.
    private var acknowledged = Set<Int32>()
    /// The first message the broker refused (an MQTT 5 PUBACK or PUBREC reason code of 0x80
    /// or more): its id and the reason code.
    private var refusal: (id: Int32, reason: Int32)?

    private let elapsed: MonotonicClock

    private init(broker: MQTTBroker, version: MQTTVersion, keepsSession: Bool, handle: OpaquePointer, elapsed: MonotonicClock) {
        self.broker = broker
        self.version = version
        self.keepsSession = keepsSession
        self.handle = handle
        self.elapsed = elapsed
    }

    deinit { mosquitto_destroy(handle) }

    /// Connects and waits for the broker's CONNACK, for at most the endpoint's timeout.
    ///
    /// A session to keep starts with a clean one that is ended at once: a killed process may
    /// have left a session whose packet ids this one would reuse for other messages. That
    /// first connection is also the bounded probe that libmosquitto's blocking connect, the
    /// only one that sends CONNECT properties, needs before it.
    static func connect(to broker: MQTTBroker, version: MQTTVersion, inflight: Int32, elapsed: MonotonicClock) -> Result<Session, ConnectFailure> {
        guard version == .v5 && broker.sessionExpirySeconds > 0 else {
            return open(broker, version: version, inflight: inflight, elapsed: elapsed, keepingSession: false)
        }
        switch open(broker, version: version, inflight: inflight, elapsed: elapsed, keepingSession: false) {
        case .success(let probe): probe.disconnect()
        case .failure(let failure): return .failure(failure)
        }
        return open(broker, version: version, inflight: inflight, elapsed: elapsed, keepingSession: true)
    }

    private static func open(_ broker: MQTTBroker, version: MQTTVersion, inflight: Int32, elapsed: MonotonicClock,
                             keepingSession: Bool) -> Result<Session, ConnectFailure> {
        for (name, path) in [("caFile", broker.caFile), ("certFile", broker.certFile), ("keyFile", broker.keyFile)] {
            if let path, access(path, R_OK) != 0 {
                return .failure(.failed(.refused("cannot read \(name) \(path): \(String(cString: strerror(errno)))")))
            }
        }
        guard let handle = mosquitto_new(broker.clientID, !keepingSession, nil) else {
            return .failure(.failed(.unreachable("cannot make an MQTT client: \(String(cString: strerror(errno)))")))
        }
        let session = Session(broker: broker, version: version, keepsSession: keepingSession, handle: handle, elapsed: elapsed)
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(session).toOpaque())
        _ = mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, version == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311)
        mosquitto_connect_with_flags_callback_set(handle) { _, context, code, flags in
            let session = Session.of(context)
            session.connack = code
            session.sessionPresent = flags & 1 != 0
        }
        mosquitto_publish_v5_callback_set(handle) { _, context, mid, reason, _ in
            let session = Session.of(context)
            if reason == Int32(MQTT_RC_PACKET_ID_NOT_FOUND.rawValue) {
                session.sessionForgotten = true
            } else if reason >= 0x80 {
                if session.refusal == nil { session.refusal = (mid, reason) }
            } else {
                session.acknowledged.insert(mid)
            }
        }
        mosquitto_disconnect_callback_set(handle) { _, context, _ in Session.of(context).lost = true }
        // At QoS 0 nothing waits for an answer, so Nagle's algorithm may gather messages into
        // full segments (a fifth faster on loopback); at QoS 1 and 2 each message is sent at once.
        _ = mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, broker.qos == 0 ? 0 : 1)
        _ = mosquitto_int_option(handle, MOSQ_OPT_SEND_MAXIMUM, inflight)
        if let username = broker.username, mosquitto_username_pw_set(handle, username, broker.password) != MOSQ_ERR_SUCCESS.rawValue {
            return .failure(.failed(.refused("the user name or password cannot be used")))
        }
        if broker.tls {
            // No passphrase callback would make OpenSSL ask on the terminal for an encrypted key.
            let code = mosquitto_tls_set(handle, broker.caFile, broker.caFile == nil ? "/etc/ssl/certs" : nil,
                                         broker.certFile, broker.keyFile) { _, _, _, _ in 0 }
            if code != MOSQ_ERR_SUCCESS.rawValue { return .failure(.failed(.refused("the TLS files cannot be used: \(text(of: code))"))) }
        }
        let code: Int32
        if keepingSession {
            var properties: OpaquePointer?
            defer { mosquitto_property_free_all(&properties) }
            let added = mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), broker.sessionExpirySeconds)
            code = added != MOSQ_ERR_SUCCESS.rawValue ? added
                : mosquitto_connect_bind_v5(handle, broker.host, Int32(broker.port), 60, nil, properties)
        } else {
            code = mosquitto_connect_async(handle, broker.host, Int32(broker.port), 60)
        }
        if code != MOSQ_ERR_SUCCESS.rawValue { return .failure(.failed(session.failure(code, connecting: true))) }
        if let failure = session.awaitConnack() { return .failure(failure) }
        return .success(session)
    }

    /// Waits for the broker's CONNACK, for at most the endpoint's timeout; what it refused, or
    /// `nil` when it accepted.
    private func awaitConnack() -> ConnectFailure? {
        let (session, handle) = (self, self.handle)
        // A close or an answer that is not MQTT 5 before any CONNACK may be a broker that only
        // speaks 3.1.1 (some close rather than answer); 3.1.1 then says what it really is.
        let beforeConnack: (MQTTFailure) -> ConnectFailure = { [version] in version == .v5 ? .version5Refused($0) : .failed($0) }
        let deadline = Deadline(milliseconds: broker.timeoutMilliseconds, clock: elapsed)
        while session.connack == nil {
            let code = mosquitto_loop(handle, Int32(min(100, deadline.remainingMilliseconds)), 1)
            // A refusing CONNACK also ends the loop with an error and the connection: it says why.
            if session.connack != nil { break }
            if code != MOSQ_ERR_SUCCESS.rawValue {
                // Only a close: a CONNACK libmosquitto cannot read (a broken property) is the
                // broker's fault, not a refusal of 5, and must not downgrade it for good.
                let closed = [MOSQ_ERR_CONN_LOST, MOSQ_ERR_NO_CONN].map(\.rawValue).contains(code)
                    || code == MOSQ_ERR_ERRNO.rawValue && (errno == 0 || errno == ECONNRESET)
                let failure = session.failure(code, connecting: true)
                return closed ? beforeConnack(failure) : .failed(failure)
            }
            if session.lost { return beforeConnack(session.failure(MOSQ_ERR_CONN_LOST.rawValue, connecting: true)) }
            if deadline.hasPassed { return .failed(.unreachable("no answer from the broker within the timeout")) }
        }
        let connack = session.connack ?? 0
        switch (version, connack) {
        case (_, 0): return nil
        case (.v5, Int32(MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION.rawValue)), (.v5, 1):
            return .version5Refused(.refused("the broker refused MQTT 5"))
        case (.v311, 3), (.v5, 0x88), (.v5, 0x89):
            return .failed(.unreachable("the broker is unavailable"))
        case (.v311, 4), (.v5, 0x86):
            return .failed(.refused("the broker refused the user name or password"))
        case (.v311, 5), (.v5, 0x87):
            return .failed(.refused("the broker refused the connection as not authorized (check the user name or password, and the broker's ACL)"))
        case (.v311, let code):
            return .failed(.refused("the broker refused the connection: \(String(cString: mosquitto_connack_string(code)))"))
        case (.v5, let code):
            return .failed(.refused("the broker refused the connection: \(String(cString: mosquitto_reason_string(code)).lowercased()) (reason code 0x\(String(code, radix: 16)))"))
        }
    }

    /// Whether a dropped connection may be resumed for `messages`: it keeps a session the
    /// broker did not say it lost, and `messages` begin with what it has in flight, in order
    /// (the caller's next try publishes again what was not acknowledged).
    func canResume(with messages: ArraySlice<MQTTMessage>) -> Bool {
        guard keepsSession, !sessionForgotten, messages.count >= unacknowledged else { return false }
        return zip(publishedRecords[head...], messages).allSatisfy { $0 == $1.id }
    }

    /// What `resume()` found.
    enum Resumption {
        /// The broker had the session: what was in flight is on its way again.
        case resumed
        /// The broker took the connection but had no session (restarted without keeping
        /// sessions, or the session expired): what was in flight must be published anew.
        case withoutSession
        /// No connection: the session stays set aside for the next try.
        case failed(MQTTFailure)
    }

    /// Connects again in the same session, on the same handle, which keeps what is in flight
    /// and sends it again once the broker accepts.
    func resume() -> Resumption {
        (connack, lost, sessionPresent) = (nil, false, false)
        let code = mosquitto_reconnect_async(handle)
        let failure = code == MOSQ_ERR_SUCCESS.rawValue ? awaitConnack()?.reported : self.failure(code, connecting: true)
        if let failure {
            lost = true
            return .failed(failure)
        }
        return sessionPresent ? .resumed : .withoutSession
    }

    /// Leaves the connection for `resume()`: a broker too slow to acknowledge is connected to
    /// again, never published to again on this connection (that would send twice what is in
    /// flight).
    func setAside() { lost = true }

    /// Publishes `messages` in order and waits until at most `limit` of all published are
    /// unacknowledged, the connection drops, or the broker acknowledges nothing for the
    /// endpoint's timeout; the outcome counts the acknowledgements since the last one.
    func publish(_ messages: ArraySlice<MQTTMessage>, leaving limit: Int) -> MQTTOutcome {
        var failure: MQTTFailure?
        for message in messages {
            var id: Int32 = 0
            let code = version == .v5 ? publishVersion5(message, id: &id) : message.payload.withUnsafeBytes {
                mosquitto_publish(handle, &id, broker.topic, Int32($0.count), $0.baseAddress, Int32(broker.qos), false)
            }
            guard code == MOSQ_ERR_SUCCESS.rawValue else {
                failure = code == MOSQ_ERR_PAYLOAD_SIZE.rawValue ? .refused("a record is larger than MQTT allows")
                    : code == MOSQ_ERR_OVERSIZE_PACKET.rawValue ? .refused("a record is larger than the broker takes (the Maximum Packet Size of its CONNACK)")
                    : self.failure(code)
                break
            }
            published.append(id)
            publishedRecords.append(message.id)
        }
        var done = countAcknowledged()
        var deadline = Deadline(milliseconds: broker.timeoutMilliseconds, clock: elapsed)
        while failure == nil && unacknowledged > limit {
            // A broker that delays small packets (Nagle's algorithm, mosquitto's default) holds
            // its next PUBACKs until this side acknowledges the last; without this, Linux
            // delays that by up to 40 ms whenever there is nothing to send with it.
            var quick: Int32 = 1
            _ = setsockopt(mosquitto_socket(handle), Int32(IPPROTO_TCP), TCP_QUICKACK, &quick, socklen_t(MemoryLayout<Int32>.size))
            let code = mosquitto_loop(handle, Int32(min(100, deadline.remainingMilliseconds)), 1)
            let counted = countAcknowledged()
            done += counted
            if let refusal {
                failure = refused(refusal.reason)
            } else if sessionForgotten {
                lost = true
                failure = .unreachable("the broker lost the session of the messages in flight")
            } else if code != MOSQ_ERR_SUCCESS.rawValue {
                failure = self.failure(code)
            } else if lost {
                failure = .unreachable("the broker closed the connection")
            } else if counted > 0 {
                deadline = Deadline(milliseconds: broker.timeoutMilliseconds, clock: elapsed)
            } else if deadline.hasPassed {
                failure = .unreachable("no acknowledgement from the broker within the timeout")
            }
        }
        return MQTTOutcome(acknowledged: done, failure: failure)
    }

    /// Publishes `message` with MQTT 5's properties: the record id as user property `id`, and
    /// the Message Expiry Interval when the endpoint has one. libmosquitto copies them.
    private func publishVersion5(_ message: MQTTMessage, id: inout Int32) -> Int32 {
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        var code = mosquitto_property_add_string_pair(&properties, Int32(MQTT_PROP_USER_PROPERTY.rawValue), "id", message.id)
        if code == MOSQ_ERR_SUCCESS.rawValue, let expiry = broker.messageExpirySeconds {
            code = mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue), expiry)
        }
        guard code == MOSQ_ERR_SUCCESS.rawValue else { return code }
        return message.payload.withUnsafeBytes {
            mosquitto_publish_v5(handle, &id, broker.topic, Int32($0.count), $0.baseAddress, Int32(broker.qos), false, properties)
        }
    }

    /// A message the broker refused by its PUBACK's reason code: a quota is temporary, the rest
    /// (not authorized, a topic or payload it will not take) is the endpoint's to fix.
    private func refused(_ reason: Int32) -> MQTTFailure {
        let text = "the broker refused a message: \(String(cString: mosquitto_reason_string(reason)).lowercased()) (reason code 0x\(String(reason, radix: 16)))"
        return reason == Int32(MQTT_RC_QUOTA_EXCEEDED.rawValue) ? .unreachable(text) : .refused(text)
    }

    /// How many messages published on this connection are not counted as acknowledged.
    var unacknowledged: Int { published.count - head }

    /// Counts the acknowledged messages at the head of `published` and forgets them.
    func countAcknowledged() -> Int {
        let start = head
        while head < published.count && acknowledged.remove(published[head]) != nil { head += 1 }
        let counted = head - start
        if head == published.count || head > 8_192 {
            published.removeFirst(head)
            publishedRecords.removeFirst(head)
            head = 0
        }
        return counted
    }

    /// Sends DISCONNECT, so the broker sees a clean end rather than a lost client, and ends a
    /// kept session with it (a Session Expiry Interval of 0): nothing of it is wanted again.
    func disconnect() {
        guard !lost else { return }
        if keepsSession {
            var properties: OpaquePointer?
            defer { mosquitto_property_free_all(&properties) }
            _ = mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), 0)
            _ = mosquitto_disconnect_v5(handle, 0, properties)
        } else {
            _ = mosquitto_disconnect(handle)
        }
        _ = mosquitto_loop(handle, 0, 1)
        lost = true
    }

    /// What a libmosquitto error code means for the records. Before the CONNACK (`connecting`),
    /// a TLS connection the broker closes, or an answer that is not MQTT, says the endpoint is
    /// configured wrongly (a client certificate it refuses, a port that is not a broker).
    private func failure(_ code: Int32, connecting: Bool = false) -> MQTTFailure {
        lost = true
        let place = "\(broker.host):\(broker.port)"
        if connecting && code == MOSQ_ERR_PROTOCOL.rawValue || connecting && code == MOSQ_ERR_ERRNO.rawValue && errno == 0 {
            return .refused("\(place) does not answer as an MQTT broker\(broker.tls ? " over TLS" : "") (check the URL's scheme and port)")
        }
        if connecting && broker.tls && (code == MOSQ_ERR_CONN_LOST.rawValue || code == MOSQ_ERR_NO_CONN.rawValue
                                        || code == MOSQ_ERR_ERRNO.rawValue && errno == ECONNRESET) {
            return .refused("the broker at \(place) closed the connection during the TLS handshake (does it refuse or require this device's certificate? check certFile and keyFile)")
        }
        switch code {
        case MOSQ_ERR_TLS.rawValue:
            return .refused("the TLS handshake with \(broker.host):\(broker.port) failed (check caFile, certFile, keyFile and that the broker's certificate names the host)")
        case MOSQ_ERR_ERRNO.rawValue:
            return .unreachable("cannot connect to \(broker.host):\(broker.port): \(String(cString: strerror(errno)).lowercased())")
        case MOSQ_ERR_NO_CONN.rawValue, MOSQ_ERR_CONN_LOST.rawValue:
            return .unreachable("the broker closed the connection")
        case MOSQ_ERR_EAI.rawValue:
            return .unreachable("unknown host \(broker.host)")
        default:
            return .unreachable(Session.text(of: code))
        }
    }

    private static func text(of code: Int32) -> String { String(cString: mosquitto_strerror(code)).lowercased() }

    private static func of(_ context: UnsafeMutableRawPointer?) -> Session {
        Unmanaged<Session>.fromOpaque(context!).takeUnretainedValue()
    }
}
