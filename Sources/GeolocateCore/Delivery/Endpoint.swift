import Foundation

/// A configured destination (`endpoints.NAME.*`).
public struct Endpoint: Sendable, Equatable {
    public var name: String
    public var url: String
    public var headers: [String: String]
    public var format: EndpointFormat
    public var batchSize: Int
    public var timeoutMilliseconds: Int64

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

    /// The URL without credentials, for messages and `--json`.
    public var redactedURL: String { ConfigStore.redactedURL(url) }

    /// The destination of records `trigger --post URL` could not deliver: named by its URL
    /// (no configured name contains "://"), one record per request, as `--post` sends it.
    static func post(to url: String) -> Endpoint {
        Endpoint(name: url, url: url, format: .mosaic, batchSize: 1)
    }

    /// Whether this is a `trigger --post` URL rather than a configured endpoint.
    var isPostDestination: Bool { name.contains("://") }

    /// The name for messages and reports: a `--post` URL without its secrets.
    package var displayName: String { isPostDestination ? redactedURL : name }

    /// The POST of `records` in this endpoint's format, under `policy`.
    func request(for records: [Record], policy: OutputPolicy, idempotencyKey: String) -> DeliveryRequest {
        DeliveryRequest(url: url, headers: headers, contentType: format.contentType, idempotencyKey: idempotencyKey,
                        body: format.body(for: records, policy: policy), timeoutMilliseconds: timeoutMilliseconds)
    }
}
