import Foundation

/// A configured destination (`endpoints.NAME.*`).
package struct Endpoint: Sendable, Equatable {
    package var name: String
    package var url: String
    package var headers: [String: String]
    package var format: EndpointFormat
    /// `endpoints.NAME.actions`: the actions whose records it receives; `nil` for all.
    package var actions: [String]?
    package var batchSize: Int
    package var timeoutMilliseconds: Int64
    /// MQTT: QoS and credentials (`endpoints.NAME.qos`, …).
    package var mqtt = MQTTSettings()
    /// `endpoints.NAME.caFile`, `.certFile` and `.keyFile`, for `https://` and `mqtts://`.
    package var tls = TLSFiles()

    /// An MQTT endpoint's session settings; unused over HTTP.
    package struct MQTTSettings: Sendable, Equatable {
        package var qos = ConfigKey.endpointQoS.builtInValue
        package var version = ConfigKey.endpointMQTTVersion.builtInValue
        package var messageExpiryMilliseconds: Int64?
        /// `endpoints.NAME.sessionExpiry`; `nil` for the default of its QoS.
        package var sessionExpiryMilliseconds: Int64?
        package var username: String?
        package var password: String?

        package init() {}
    }

    package init(name: String, url: String, headers: [String: String] = [:], format: EndpointFormat = .openlocate,
                 batchSize: Int = ConfigKey.endpointBatchSize.builtInValue,
                 timeoutMilliseconds: Int64 = ConfigKey.endpointTimeout.builtInValue) {
        self.name = name
        self.url = url
        self.headers = headers
        self.format = format
        self.batchSize = batchSize
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// Whether records of `action` are meant for this endpoint.
    package func receives(action: String) -> Bool {
        actions.map { $0.contains(action) } ?? true
    }

    /// The URL without credentials, for messages and `--json` (`{deviceId}` as written).
    package var redactedURL: String { ConfigStore.redactedURL(url).replacingOccurrences(of: "%7BdeviceId%7D", with: "{deviceId}") }

    /// The destination of records `trigger --post URL` could not deliver: named by its URL
    /// (no configured name contains "://"), one record per request, as `--post` sends it.
    package static func post(to url: String) -> Endpoint {
        Endpoint(name: url, url: url, format: .mosaic, batchSize: 1)
    }

    /// Whether this is a `trigger --post` URL rather than a configured endpoint.
    package var isPostDestination: Bool { name.contains("://") }

    /// The name for messages and reports: a `--post` URL without its secrets.
    package var displayName: String { isPostDestination ? redactedURL : name }

    /// Whether records go to an MQTT broker (`mqtt://`, `mqtts://`).
    package var isMQTT: Bool { (try? MQTTBroker.address(of: url)) != nil }

    /// Why the format cannot go to the URL (OsmAnd over MQTT), or `nil`: `config set` refuses
    /// the pair as flush would, rather than store what no flush can send.
    package var formatProblem: String? {
        format == .osmand && isMQTT ? "the osmand format is HTTP only; use owntracks, openlocate or mosaic over MQTT" : nil
    }
}
