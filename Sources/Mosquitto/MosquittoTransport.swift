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
package final class MosquittoTransport: MQTTTransport, @unchecked Sendable {
    // @unchecked: `session` is only touched on `queue`.
    private let queue = DispatchQueue(label: "geolocate.mosquitto")
    private var session: Session?
    /// Messages are published and acknowledged in chunks of this many, so message ids (16
    /// bits) never repeat within a wait and a huge batch is not queued all at once.
    private static let chunk = 1_000

    private static let libraryReady: Void = { _ = mosquitto_lib_init() }()

    /// What the broker's answers are timed on.
    private let elapsed: MonotonicClock

    package init(elapsed: MonotonicClock) {
        _ = MosquittoTransport.libraryReady
        self.elapsed = elapsed
    }

    package func publish(_ messages: [[UInt8]], to broker: MQTTBroker) async -> MQTTOutcome {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.publishNow(messages, to: broker)) }
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

    private func publishNow(_ messages: [[UInt8]], to broker: MQTTBroker) -> MQTTOutcome {
        if let session, session.broker != broker || session.lost {
            session.disconnect()
            self.session = nil
        }
        if session == nil {
            switch Session.connect(to: broker, elapsed: elapsed) {
            case .success(let connected): session = connected
            case .failure(let failure): return MQTTOutcome(acknowledged: 0, failure: failure)
            }
        }
        var acknowledged = 0
        while acknowledged < messages.count, let session {
            let chunk = messages[acknowledged..<min(messages.count, acknowledged + MosquittoTransport.chunk)]
            let outcome = session.publish(chunk)
            acknowledged += outcome.acknowledged
            if let failure = outcome.failure {
                session.disconnect()
                self.session = nil
                return MQTTOutcome(acknowledged: acknowledged, failure: failure)
            }
        }
        return MQTTOutcome(acknowledged: acknowledged)
    }
}

/// One connection to a broker and what its callbacks reported.
private final class Session {
    let broker: MQTTBroker
    private let handle: OpaquePointer
    /// The CONNACK's return code, once it came.
    private var connack: Int32?
    /// Set when the connection dropped.
    private(set) var lost = false
    /// The message ids the broker acknowledged since the last `publish` began.
    private var acknowledged = Set<Int32>()

    private let elapsed: MonotonicClock

    private init(broker: MQTTBroker, handle: OpaquePointer, elapsed: MonotonicClock) {
        self.broker = broker
        self.handle = handle
        self.elapsed = elapsed
    }

    deinit { mosquitto_destroy(handle) }

    /// Connects and waits for the broker's CONNACK, for at most the endpoint's timeout.
    static func connect(to broker: MQTTBroker, elapsed: MonotonicClock) -> Result<Session, MQTTFailure> {
        for (name, path) in [("caFile", broker.caFile), ("certFile", broker.certFile), ("keyFile", broker.keyFile)] {
            if let path, access(path, R_OK) != 0 {
                return .failure(.refused("cannot read \(name) \(path): \(String(cString: strerror(errno)))"))
            }
        }
        guard let handle = mosquitto_new(broker.clientID, true, nil) else {
            return .failure(.unreachable("cannot make an MQTT client: \(String(cString: strerror(errno)))"))
        }
        let session = Session(broker: broker, handle: handle, elapsed: elapsed)
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(session).toOpaque())
        mosquitto_connect_callback_set(handle) { _, context, code in Session.of(context).connack = code }
        mosquitto_publish_callback_set(handle) { _, context, mid in Session.of(context).acknowledged.insert(mid) }
        mosquitto_disconnect_callback_set(handle) { _, context, _ in Session.of(context).lost = true }
        _ = mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, 1)
        _ = mosquitto_int_option(handle, MOSQ_OPT_SEND_MAXIMUM, 100)
        if let username = broker.username, mosquitto_username_pw_set(handle, username, broker.password) != MOSQ_ERR_SUCCESS.rawValue {
            return .failure(.refused("the user name or password cannot be used"))
        }
        if broker.tls {
            // No passphrase callback would make OpenSSL ask on the terminal for an encrypted key.
            let code = mosquitto_tls_set(handle, broker.caFile, broker.caFile == nil ? "/etc/ssl/certs" : nil,
                                         broker.certFile, broker.keyFile) { _, _, _, _ in 0 }
            if code != MOSQ_ERR_SUCCESS.rawValue { return .failure(.refused("the TLS files cannot be used: \(text(of: code))")) }
        }
        let code = mosquitto_connect_async(handle, broker.host, Int32(broker.port), 60)
        if code != MOSQ_ERR_SUCCESS.rawValue { return .failure(session.failure(code, connecting: true)) }
        let deadline = Deadline(milliseconds: broker.timeoutMilliseconds, clock: elapsed)
        while session.connack == nil {
            let code = mosquitto_loop(handle, Int32(min(100, deadline.remainingMilliseconds)), 1)
            // A refusing CONNACK also ends the loop with an error and the connection: it says why.
            if session.connack != nil { break }
            if code != MOSQ_ERR_SUCCESS.rawValue { return .failure(session.failure(code, connecting: true)) }
            if session.lost { return .failure(session.failure(MOSQ_ERR_CONN_LOST.rawValue, connecting: true)) }
            if deadline.hasPassed { return .failure(.unreachable("no answer from the broker within the timeout")) }
        }
        switch session.connack ?? 0 {
        case 0: return .success(session)
        case 3: return .failure(.unreachable("the broker is unavailable"))
        case 4: return .failure(.refused("the broker refused the user name or password"))
        case 5: return .failure(.refused("the broker refused the connection as not authorized (check the user name or password, and the broker's ACL)"))
        case let code: return .failure(.refused("the broker refused the connection: \(String(cString: mosquitto_connack_string(code)))"))
        }
    }

    /// Publishes `messages` in order and waits until the broker acknowledged them all, the
    /// connection drops, or it acknowledges nothing for the endpoint's timeout.
    func publish(_ messages: ArraySlice<[UInt8]>) -> MQTTOutcome {
        acknowledged.removeAll(keepingCapacity: true)
        var ids: [Int32] = []
        ids.reserveCapacity(messages.count)
        var failure: MQTTFailure?
        for message in messages {
            var id: Int32 = 0
            let code = message.withUnsafeBytes {
                mosquitto_publish(handle, &id, broker.topic, Int32($0.count), $0.baseAddress, Int32(broker.qos), false)
            }
            guard code == MOSQ_ERR_SUCCESS.rawValue else {
                failure = code == MOSQ_ERR_PAYLOAD_SIZE.rawValue ? .refused("a record is larger than MQTT allows") : self.failure(code)
                break
            }
            ids.append(id)
        }
        var deadline = Deadline(milliseconds: broker.timeoutMilliseconds, clock: elapsed)
        var done = 0
        while failure == nil {
            while done < ids.count && acknowledged.contains(ids[done]) { done += 1 }
            if done == ids.count { break }
            let before = acknowledged.count
            let code = mosquitto_loop(handle, Int32(min(100, deadline.remainingMilliseconds)), 1)
            if code != MOSQ_ERR_SUCCESS.rawValue {
                failure = self.failure(code)
            } else if lost {
                failure = .unreachable("the broker closed the connection")
            } else if acknowledged.count > before {
                deadline = Deadline(milliseconds: broker.timeoutMilliseconds, clock: elapsed)
            } else if deadline.hasPassed {
                failure = .unreachable("no acknowledgement from the broker within the timeout")
            }
        }
        while done < ids.count && acknowledged.contains(ids[done]) { done += 1 }
        return MQTTOutcome(acknowledged: done, failure: failure)
    }

    /// Sends DISCONNECT, so the broker sees a clean end rather than a lost client.
    func disconnect() {
        guard !lost else { return }
        _ = mosquitto_disconnect(handle)
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
