import GeolocateConfig
import GeolocateSpool

/// What an answer means for the records it carried (SPEC §5).
package enum DeliveryVerdict: Equatable {
    /// 2xx.
    case delivered
    /// Network errors, timeouts, 408, 429, 5xx: keep the records and try again later. `kind`
    /// is `.configuration` for a refused connection or an unknown host, which status reports
    /// at once although flush tries again.
    case retry(String, retryAfterMilliseconds: Int64?, kind: EndpointErrorKind = .temporary)
    /// 401, 403, 404, 405, 407, a redirect or a failed TLS handshake: the endpoint, its
    /// credentials or its TLS files are wrong, not the records, which stay pending.
    case endpointRefused(String)
    /// Any other 4xx: some of the records are refused.
    case recordsRefused(Int)

    /// What `response` from `endpoint` means (a TLS failure is said naming its settings).
    package init(_ response: DeliveryResponse, from endpoint: Endpoint) {
        switch response {
        case .status(let code, _, _) where (200..<300).contains(code):
            self = .delivered
        case .status(let code, _, let location) where (300..<400).contains(code):
            let target = location.map { " to \(ConfigStore.redactedURL($0))" } ?? ""
            self = .endpointRefused("HTTP \(code) redirect\(target), which geolocate does not follow (configure the final URL)")
        case .status(let code, _, _) where [401, 403, 404, 405, 407].contains(code):
            self = .endpointRefused("HTTP \(code): the endpoint's URL or credentials are wrong")
        case .status(let code, _, _) where (400..<500).contains(code) && code != 408 && code != 429:
            self = .recordsRefused(code)
        case .status(let code, let retryAfter, _):
            self = .retry("HTTP \(code)", retryAfterMilliseconds: retryAfter)
        case .failed(let reason, let kind):
            self = .retry(reason, retryAfterMilliseconds: nil, kind: kind)
        case .unusableURL(let reason):
            self = .endpointRefused(reason)
        case .tlsFailed(let failure):
            self = .endpointRefused(endpoint.text(of: failure))
        }
    }
}
