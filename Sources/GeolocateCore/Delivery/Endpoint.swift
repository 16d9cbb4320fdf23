import Foundation
import NIOSSL

/// A configured destination (`endpoints.NAME.*`).
public struct Endpoint: Sendable, Equatable {
    public var name: String
    public var url: String
    public var headers: [String: String]
    public var format: EndpointFormat
    public var batchSize: Int
    public var timeoutMilliseconds: Int64
    /// MQTT: QoS and credentials (`endpoints.NAME.qos`, …).
    public var mqtt = MQTTSettings()
    /// `endpoints.NAME.caFile`, `.certFile` and `.keyFile`, for `https://` and `mqtts://`.
    public var tls = TLSFiles()

    /// An MQTT endpoint's session settings; unused over HTTP.
    public struct MQTTSettings: Sendable, Equatable {
        public var qos = ConfigKey.endpointQoS.builtInValue
        public var username: String?
        public var password: String?

        public init() {}
    }

    public init(name: String, url: String, headers: [String: String] = [:], format: EndpointFormat = .openlocate,
                batchSize: Int = ConfigKey.endpointBatchSize.builtInValue,
                timeoutMilliseconds: Int64 = ConfigKey.endpointTimeout.builtInValue) {
        self.name = name
        self.url = url
        self.headers = headers
        self.format = format
        self.batchSize = batchSize
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// The URL without credentials, for messages and `--json` (`{deviceId}` as written).
    public var redactedURL: String { ConfigStore.redactedURL(url).replacingOccurrences(of: "%7BdeviceId%7D", with: "{deviceId}") }

    /// The destination of records `trigger --post URL` could not deliver: named by its URL
    /// (no configured name contains "://"), one record per request, as `--post` sends it.
    static func post(to url: String) -> Endpoint {
        Endpoint(name: url, url: url, format: .mosaic, batchSize: 1)
    }

    /// Whether this is a `trigger --post` URL rather than a configured endpoint.
    var isPostDestination: Bool { name.contains("://") }

    /// The name for messages and reports: a `--post` URL without its secrets.
    package var displayName: String { isPostDestination ? redactedURL : name }

    /// Whether records go to an MQTT broker (`mqtt://`, `mqtts://`).
    public var isMQTT: Bool { (try? MQTTBroker.address(of: url)) != nil }

    /// The broker, topic and session this endpoint publishes with, as `sender`.
    /// - Throws: `GeolocateError.missingSetting` saying what is wrong (78): an unusable URL or
    ///   topic, the `osmand` format (HTTP only), or TLS files given for plain `mqtt://`.
    public func broker(as sender: Sender) throws -> MQTTBroker? {
        func wrong(_ why: String) -> GeolocateError { .missingSetting(why) }
        let address: (host: String, port: Int, tls: Bool, topic: String, username: String?, password: String?)?
        do { address = try MQTTBroker.address(of: url) } catch let error as GeolocateError { throw wrong(error.description) }
        guard let address else { return nil }
        if format == .osmand { throw wrong("the osmand format is HTTP only; use owntracks, openlocate or mosaic over MQTT") }
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
        guard let clientID = sender.deviceID else { throw wrong("MQTT needs the device id (the state directory's device-id file)") }
        let topic = address.topic.replacingOccurrences(of: "{deviceId}", with: clientID)
        return MQTTBroker(host: address.host, port: address.port, tls: address.tls, topic: topic, qos: mqtt.qos, clientID: clientID,
                          username: mqtt.username ?? address.username, password: mqtt.password ?? address.password,
                          caFile: tls.caFile, certFile: tls.certFile, keyFile: tls.keyFile,
                          timeoutMilliseconds: timeoutMilliseconds)
    }

    /// The HTTPS client configuration of the endpoint's TLS files (`caFile`, `certFile`,
    /// `keyFile`), read once for a flush or a `trigger --post`; `nil` for the system's CAs, and
    /// for MQTT, whose library reads the files itself.
    /// - Throws: `GeolocateError.missingSetting` saying what is wrong (78): TLS files for a
    ///   plain `http://` URL, a certificate without its key, a file that cannot be read or
    ///   holds no PEM, a key that is not the certificate's.
    public func tlsConfiguration() throws -> TLSConfiguration? {
        guard !isMQTT, !tls.isEmpty else { return nil }
        guard url.lowercased().hasPrefix("https://") else {
            throw GeolocateError.missingSetting("caFile, certFile and keyFile need an https:// URL")
        }
        return try tls.clientConfiguration(keys: "endpoints.\(name)")
    }

    /// Checks the settings that only make sense together, as sending would (`config validate`):
    /// the MQTT session and the TLS files.
    /// - Throws: `GeolocateError.missingSetting` saying what is wrong (78).
    public func validate() throws {
        _ = try broker(as: Sender(deviceID: "00000000-0000-0000-0000-000000000000"))
        _ = try tlsConfiguration()
    }

    /// A TLS failure in words naming the host and the setting that fixes it.
    func text(of failure: TLSFailure) -> String {
        let host = URLComponents(string: url)?.host ?? redactedURL
        return failure.text(host: host, for: isPostDestination ? .postURL : .endpoint(name, tls))
    }

    /// The request carrying `records` in this endpoint's format, under `policy`: a POST of the
    /// body, or for `osmand` the query added to the URL; over HTTPS with `tls`
    /// (`tlsConfiguration()`).
    func request(for records: [Record], policy: OutputPolicy, sender: Sender, idempotencyKey: String,
                 tls: TLSConfiguration? = nil) -> DeliveryRequest {
        var target = url
        if format == .osmand, let record = records.first {
            target += (url.contains("?") ? "&" : "?") + OsmAndEncoder.query(policy.applied(to: record), sender: sender)
        }
        return DeliveryRequest(url: target, headers: headers, contentType: format.contentType, idempotencyKey: idempotencyKey,
                               body: format.body(for: records, policy: policy, sender: sender), timeoutMilliseconds: timeoutMilliseconds,
                               tls: tls)
    }
}
