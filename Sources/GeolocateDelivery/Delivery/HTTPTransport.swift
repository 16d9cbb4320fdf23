import AsyncHTTPClient
import Foundation
import GeolocateConfig
import GeolocateModel
import GeolocateSpool
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NMEA

/// One POST of a batch.
package struct DeliveryRequest: Sendable {
    package var url: String
    package var headers: [(String, String)]
    package var body: [UInt8]
    package var timeoutMilliseconds: Int64
    /// The endpoint's TLS files (`Endpoint.tlsConfiguration()`); `nil`: the system's CAs.
    package var tls: TLSConfiguration?

    package init(url: String, headers: [(String, String)], body: [UInt8], timeoutMilliseconds: Int64, tls: TLSConfiguration? = nil) {
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutMilliseconds = timeoutMilliseconds
        self.tls = tls
    }
}

extension DeliveryRequest {
    /// A POST with geolocate's headers: the endpoint's own (sorted), then `Content-Type`,
    /// `Idempotency-Key` and `User-Agent`.
    package init(url: String, headers: [String: String] = [:], contentType: String, idempotencyKey: String,
                 body: [UInt8], timeoutMilliseconds: Int64, tls: TLSConfiguration? = nil) {
        self.init(url: url,
                  headers: headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } + [
                      ("Content-Type", contentType), ("Idempotency-Key", idempotencyKey),
                      ("User-Agent", "geolocate/\(Defaults.version)"),
                  ],
                  body: body, timeoutMilliseconds: timeoutMilliseconds, tls: tls)
    }
}

/// What came back from a POST.
package enum DeliveryResponse: Sendable, Equatable {
    /// The server answered with `status`; `retryAfter` is its `Retry-After` in milliseconds,
    /// `location` its `Location` (redirects are never followed).
    case status(Int, retryAfterMilliseconds: Int64?, location: String? = nil)
    /// No answer: connection refused or reset, timeout, DNS; the text says which, and `kind`
    /// whether it is the endpoint's configuration (refused, unknown host, TLS) or may pass.
    case failed(String, kind: EndpointErrorKind = .temporary)
    /// The URL cannot be used at all (a port beyond 65535): nothing was sent.
    case unusableURL(String)
    /// The TLS handshake failed: the server's certificate, or this device's, or the URL is
    /// wrong; nothing was sent.
    case tlsFailed(TLSFailure)
}

/// What came back from a GET.
package enum FetchResponse: Sendable, Equatable {
    /// The server answered with `status` and (up to 1 MiB of) `body`.
    case status(Int, body: [UInt8])
    /// No answer: connection refused or reset, timeout, DNS; the text says which.
    case failed(String)
    /// The TLS handshake failed: the server's certificate, or this device's, or the URL is wrong.
    case tlsFailed(TLSFailure)
}

/// Sends batches over HTTP and asks HTTP services (the street geocoder); the seam tests and
/// benchmarks share with production.
package protocol HTTPTransport: Sendable {
    func post(_ request: DeliveryRequest) async -> DeliveryResponse
    /// A GET of `url`, over HTTPS with `tls` (`nil`: the system's CAs).
    func get(_ url: String, headers: [(String, String)], timeoutMilliseconds: Int64, tls: TLSConfiguration?) async -> FetchResponse
}

extension HTTPTransport {
    /// A GET of `url`, trusting the system's CAs.
    package func get(_ url: String, headers: [(String, String)], timeoutMilliseconds: Int64) async -> FetchResponse {
        await get(url, headers: headers, timeoutMilliseconds: timeoutMilliseconds, tls: nil)
    }
}

/// `Retry-After`: seconds, or an HTTP date, held to at most a day.
package enum RetryAfter {
    /// The longest wait an endpoint can ask for: a date in year 9999 must not park it forever
    /// (`flush --ignore-retry-after` overrides any wait).
    package static let maximumMilliseconds: Int64 = 86_400_000

    package static func milliseconds(_ text: String, nowMilliseconds: Int64) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let seconds = Int64(trimmed), seconds >= 0 { return min(seconds, maximumMilliseconds / 1000) * 1000 }
        if trimmed.allSatisfy(\.isNumber), !trimmed.isEmpty { return maximumMilliseconds }  // beyond Int64
        guard let date = httpDate(trimmed) else { return nil }
        return min(max(0, date - nowMilliseconds), maximumMilliseconds)
    }

    /// An HTTP date (RFC 9110 IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`) in epoch
    /// milliseconds. Read by hand: Foundation's DateFormatter leaks on some input (found by
    /// `make fuzz`), and this is the one form a server must send.
    package static func httpDate(_ text: String) -> Int64? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count == 6, parts[0].count == 4, parts[0].hasSuffix(","), parts[5] == "GMT",
              parts[1].count == 2, let day = Int(parts[1]), let month = months.firstIndex(of: String(parts[2])),
              parts[3].count == 4, let year = Int(parts[3]) else { return nil }
        let clock = parts[4].split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
              hour <= 23, minute <= 59, second <= 60 else { return nil }
        let date = CivilDate(year: year, month: month + 1, day: day)
        guard date.isValid else { return nil }
        return (Int64(date.daysSinceEpoch) * 86_400 + Int64(hour * 3600 + minute * 60 + second)) * 1000
    }
}
