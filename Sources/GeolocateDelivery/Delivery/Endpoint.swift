import Foundation
import GeolocateConfig
import GeolocateModel
import NIOSSL

extension Endpoint {
    /// The broker, topic and session this endpoint publishes with, as `sender`.
    /// - Throws: `GeolocateError.missingSetting` saying what is wrong (78): an unusable URL or
    ///   topic, the `osmand` format (HTTP only), or TLS files given for plain `mqtt://`.
    package func broker(as sender: Sender) throws -> MQTTBroker? {
        func wrong(_ why: String) -> GeolocateError { .missingSetting(why) }
        let address: (host: String, port: Int, tls: Bool, topic: String, username: String?, password: String?)?
        do { address = try MQTTBroker.address(of: url) } catch let error as GeolocateError { throw wrong(error.description) }
        guard let address else { return nil }
        if let formatProblem { throw wrong(formatProblem) }
        if !address.tls, !tls.isEmpty { throw wrong("caFile, certFile and keyFile need an mqtts:// URL") }
        if (tls.certFile == nil) != (tls.keyFile == nil) { throw wrong("certFile and keyFile go together") }
        // libmosquitto opens these itself, blocking: a FIFO would hang this flush and every later
        // one on the flush lock. A missing or unreadable file is said when connecting.
        for (name, file) in [("caFile", tls.caFile), ("certFile", tls.certFile), ("keyFile", tls.keyFile)] {
            guard let file, let problem = BoundedFile.problem(file, limit: TLSFiles.maximumBytes) else { continue }
            switch problem {
            case .missing, .unreadable: continue
            case .notRegular, .tooLarge: throw wrong("\(name) \(file) \(problem.text(limit: TLSFiles.maximumBytes))")
            }
        }
        guard let deviceID = sender.deviceID, let clientID = sender.clientID else {
            throw wrong("MQTT needs the device id (the state directory's device-id file)")
        }
        let topic = address.topic.replacingOccurrences(of: "{deviceId}", with: deviceID)
        var broker = MQTTBroker(host: address.host, port: address.port, tls: address.tls, topic: topic, qos: mqtt.qos, clientID: clientID,
                                username: mqtt.username ?? address.username, password: mqtt.password ?? address.password,
                                caFile: tls.caFile, certFile: tls.certFile, keyFile: tls.keyFile,
                                timeoutMilliseconds: timeoutMilliseconds)
        broker.version = mqtt.version
        // Whole seconds, rounded up: a second is MQTT's unit, and 0 would mean "expired".
        broker.messageExpirySeconds = mqtt.messageExpiryMilliseconds.map { UInt32(clamping: ($0 + 999) / 1000) }
        if sender.role.retries {
            broker.sessionExpirySeconds = mqtt.sessionExpiryMilliseconds.map { UInt32(clamping: ($0 + 999) / 1000) }
                ?? (mqtt.qos == 2 ? MQTTVersion.qos2SessionExpirySeconds : 0)
        }
        return broker
    }

    /// The HTTPS client configuration of the endpoint's TLS files (`caFile`, `certFile`,
    /// `keyFile`), read once for a flush or a `trigger --post`; `nil` for the system's CAs, and
    /// for MQTT, whose library reads the files itself.
    /// - Throws: `GeolocateError.missingSetting` saying what is wrong (78): TLS files for a
    ///   plain `http://` URL, a certificate without its key, a file that cannot be read or
    ///   holds no PEM, a key that is not the certificate's.
    package func tlsConfiguration() throws -> TLSConfiguration? {
        guard !isMQTT, !tls.isEmpty else { return nil }
        guard url.lowercased().hasPrefix("https://") else {
            throw GeolocateError.missingSetting("caFile, certFile and keyFile need an https:// URL")
        }
        return try tls.clientConfiguration(keys: "endpoints.\(name)")
    }

    /// Checks the settings that only make sense together, as sending would (`config validate`):
    /// the MQTT session and the TLS files.
    /// - Throws: `GeolocateError.missingSetting` saying what is wrong (78).
    package func validate() throws {
        _ = try broker(as: Sender(deviceID: "00000000-0000-0000-0000-000000000000"))
        _ = try tlsConfiguration()
    }

    /// A TLS failure in words naming the host and the setting that fixes it.
    package func text(of failure: TLSFailure) -> String {
        let host = URLComponents(string: url)?.host ?? redactedURL
        return failure.text(host: host, for: isPostDestination ? .postURL : .endpoint(name, tls))
    }

    /// The request carrying `records` in this endpoint's format, under `policy`: a POST of the
    /// body, or for `osmand` the query added to the URL; over HTTPS with `tls`
    /// (`tlsConfiguration()`).
    package func request(for records: [Record], policy: OutputPolicy, sender: Sender, idempotencyKey: String,
                         tls: TLSConfiguration? = nil) throws -> DeliveryRequest {
        var target = url
        if format == .osmand, let record = records.first {
            target += (url.contains("?") ? "&" : "?") + OsmAndEncoder.query(policy.applied(to: record), sender: sender)
        }
        return DeliveryRequest(url: target, headers: headers, contentType: format.contentType, idempotencyKey: idempotencyKey,
                               body: try format.body(for: records, policy: policy, sender: signing(as: sender)), timeoutMilliseconds: timeoutMilliseconds,
                               tls: tls)
    }

    /// `sender`, whose tokens name this endpoint as their audience unless `signing.audience` does.
    package func signing(as sender: Sender) -> Sender {
        var sender = sender
        if sender.signer != nil, sender.signer?.audience == nil { sender.signer?.audience = audienceURL }
        return sender
    }

    /// The URL as the server knows itself: without the user and password, everything else
    /// (query, fragment) as written (`redactedURL` masks secrets for messages instead).
    package var audienceURL: String {
        guard var components = URLComponents(string: url), components.user != nil || components.password != nil else { return url }
        components.user = nil
        components.password = nil
        return components.string ?? url
    }
}
