import Foundation
import GeolocateModel

/// The MQTT protocol version an endpoint speaks (`endpoints.NAME.mqttVersion`).
package enum MQTTVersion: String, Sendable, Hashable, CaseIterable {
    /// MQTT 5: the broker's Receive Maximum bounds the window, each message carries the record
    /// id as user property `id`, and a refused message is said (a PUBACK reason code).
    case v5 = "5"
    /// MQTT 3.1.1, which every broker speaks.
    case v311 = "3.1.1"

    /// The longest Message or Session Expiry Interval: its 4-byte count of seconds.
    package static let longestExpiryMilliseconds = Int64(UInt32.max) * 1000
    /// The Session Expiry Interval of a QoS 2 endpoint that sets none: far longer than a
    /// flush's retries of one batch wait in all (30 s), so the session outlives them.
    package static let qos2SessionExpirySeconds: UInt32 = 300
}

/// Where an `mqtt://` or `mqtts://` endpoint publishes: broker, topic and session (SPEC §11).
package struct MQTTBroker: Sendable, Hashable {
    package var host: String
    package var port: Int
    /// `mqtts`: TLS, checked against `caFile` or the system's CAs.
    package var tls: Bool
    /// The topic, `{deviceId}` already replaced.
    package var topic: String
    /// 0, 1 or 2: at most once, at least once, exactly once.
    package var qos: Int
    /// The install's device id.
    package var clientID: String
    package var username: String?
    package var password: String?
    package var caFile: String?
    package var certFile: String?
    package var keyFile: String?
    /// The protocol version to connect with first.
    package var version: MQTTVersion = .v5
    /// MQTT 5's Message Expiry Interval of each message, in seconds; `nil` for none.
    package var messageExpirySeconds: UInt32?
    /// MQTT 5's Session Expiry Interval, in seconds; 0 for a clean session that ends with the
    /// connection. Above 0, a dropped connection is resumed in the same session, so what was
    /// in flight goes again with its packet ids and a QoS 2 message is not delivered twice.
    package var sessionExpirySeconds: UInt32 = 0
    /// The longest the broker may take to accept the connection, and then to acknowledge the
    /// next message, before it counts as unreachable.
    package var timeoutMilliseconds: Int64

    package init(host: String, port: Int, tls: Bool, topic: String, qos: Int, clientID: String,
                 username: String? = nil, password: String? = nil, caFile: String? = nil, certFile: String? = nil,
                 keyFile: String? = nil, timeoutMilliseconds: Int64) {
        self.host = host
        self.port = port
        self.tls = tls
        self.topic = topic
        self.qos = qos
        self.clientID = clientID
        self.username = username
        self.password = password
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// `mqtt://[USER[:PASSWORD]@]HOST[:PORT]/TOPIC` read into host, port, TLS, topic and the
    /// credentials of the URL; `nil` for an http URL.
    /// - Throws: `GeolocateError.usage` saying what is wrong: no host, a port out of range,
    ///   an empty topic or one with the wildcards `+` or `#`, which only subscriptions take.
    package static func address(of url: String) throws -> (host: String, port: Int, tls: Bool, topic: String, username: String?, password: String?)? {
        let scheme = url.prefix { $0 != ":" }.lowercased()
        guard scheme == "mqtt" || scheme == "mqtts", url.dropFirst(scheme.count).hasPrefix("://") else { return nil }
        let tls = scheme == "mqtts"
        let rest = url.dropFirst(scheme.count + 3)
        let authority = rest.prefix { $0 != "/" }
        let topic = String(rest.dropFirst(authority.count + 1))
        func invalid(_ why: String) -> GeolocateError {
            .usage("invalid MQTT URL '\(shown(url))': \(why) (use mqtt://HOST[:PORT]/TOPIC or mqtts://...)")
        }
        var hostPort = Substring(authority)
        var username: String?
        var password: String?
        if let at = authority.lastIndex(of: "@") {
            let credentials = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
            let user = credentials.prefix { $0 != ":" }
            username = String(user).removingPercentEncoding ?? String(user)
            if credentials.count > user.count {
                let secret = credentials.dropFirst(user.count + 1)
                password = String(secret).removingPercentEncoding ?? String(secret)
            }
        }
        var host = hostPort
        var port = tls ? 8883 : 1883
        if hostPort.hasPrefix("["), let close = hostPort.firstIndex(of: "]") {
            host = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            let after = hostPort[hostPort.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let number = Int(after.dropFirst()) else { throw invalid("the port must be a number") }
                port = number
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = hostPort[..<colon]
            guard let number = Int(hostPort[hostPort.index(after: colon)...]) else { throw invalid("the port must be a number") }
            port = number
        }
        guard !host.isEmpty, !host.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else { throw invalid("no host") }
        guard (1...65_535).contains(port) else { throw invalid("port \(port) is out of range (1 to 65535)") }
        try checkTopic(topic, in: url)
        return (String(host), port, tls, topic, username, password)
    }

    /// Checks a topic to publish to (MQTT 3.1.1 §4.7): not empty, no wildcards, no NUL or
    /// control characters, not a `$` topic (brokers keep those for themselves and drop what
    /// clients publish there, acknowledged), at most 65,535 bytes once `{deviceId}` (36
    /// bytes) is in.
    package static func checkTopic(_ topic: String, in url: String) throws {
        let expanded = topic.utf8.count + topic.components(separatedBy: "{deviceId}").dropFirst().count * (36 - "{deviceId}".count)
        let why: String? = topic.isEmpty ? "the topic after HOST/ is empty"
            : topic.contains("+") || topic.contains("#") ? "the topic contains the wildcard + or #, which only subscriptions take"
            : topic.hasPrefix("$") ? "a topic starting with $ is the broker's own; brokers drop what clients publish there"
            : topic.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) ? "the topic contains a control character"
            : expanded > 65_535 ? "the topic is longer than 65535 bytes (with {deviceId} replaced)" : nil
        if let why { throw GeolocateError.usage("invalid MQTT URL '\(shown(url))': \(why)") }
    }

    /// `url` for a message: without credentials, and cut to 100 characters.
    package static func shown(_ url: String) -> String {
        let redacted = ConfigStore.redactedURL(url)
        return redacted.count > 100 ? redacted.prefix(100) + "…" : redacted
    }
}
