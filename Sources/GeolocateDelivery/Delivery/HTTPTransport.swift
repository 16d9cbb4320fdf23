import AsyncHTTPClient
import Foundation
import GeolocateConfig
import GeolocateModel
import GeolocateSpool
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

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

/// `HTTPTransport` on AsyncHTTPClient.
package struct AsyncHTTPTransport: HTTPTransport {
    private let client: HTTPClient
    /// "Now" for a `Retry-After` given as a date.
    private let clock: WallClock
    /// The clock request deadlines are read from: NIO's deadlines are monotonic uptime.
    private let elapsed: MonotonicClock

    /// A client that fails at once when a connection is refused (delivery retries with its own
    /// backoff) instead of retrying until the request's deadline, and never follows a
    /// redirect: a 301/302/303 would turn the POST into a GET without the records. Process-wide
    /// and never shut down, as `HTTPClient.shared` is.
    package static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.redirectConfiguration = .disallow
        configuration.timeout.connect = .seconds(5)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    package init(client: HTTPClient = AsyncHTTPTransport.client, clock: WallClock,
                 elapsed: MonotonicClock) {
        self.client = client
        self.clock = clock
        self.elapsed = elapsed
    }

    /// The NIO deadline `milliseconds` from now on `elapsed`.
    private func deadline(in milliseconds: Int64) -> NIODeadline {
        .uptimeNanoseconds(UInt64(max(0, elapsed.nowSeconds) * 1e9)) + .milliseconds(milliseconds)
    }

    /// The nanoseconds left before `deadline` on `elapsed` (0 when past).
    private func nanosecondsLeft(until deadline: NIODeadline) -> UInt64 {
        let now = UInt64(max(0, elapsed.nowSeconds) * 1e9)
        return deadline.uptimeNanoseconds > now ? deadline.uptimeNanoseconds - now : 0
    }

    package func post(_ request: DeliveryRequest) async -> DeliveryResponse {
        if let problem = AsyncHTTPTransport.problem(with: request.url) { return .unusableURL(problem) }
        let (url, basic) = AsyncHTTPTransport.credentials(in: request.url)
        var http = HTTPClientRequest(url: url)
        http.method = .POST
        http.tlsConfiguration = request.tls
        for (name, value) in request.headers { http.headers.add(name: name, value: value) }
        if let basic, !http.headers.contains(name: "Authorization") { http.headers.add(name: "Authorization", value: basic) }
        http.body = .bytes(ByteBuffer(bytes: request.body))
        // The timeout bounds the whole exchange: AsyncHTTPClient's deadline ends with the head.
        let deadline = deadline(in: request.timeoutMilliseconds)
        do {
            let response = try await client.execute(http, deadline: deadline)
            // The status decides; the body is drained only so the connection can be reused,
            // and only while the deadline lasts (a server trickling it must not stall us).
            // An empty answer (most collectors' 2xx) needs no drain, which costs two tasks.
            if response.headers.first(name: "Content-Length") != "0" {
                await drain(response.body, until: deadline)
            }
            let retryAfter = response.headers.first(name: "Retry-After").flatMap { RetryAfter.milliseconds($0, nowMilliseconds: clock.nowMilliseconds) }
            return .status(Int(response.status.code), retryAfterMilliseconds: retryAfter,
                           location: response.headers.first(name: "Location"))
        } catch {
            if let failure = TLSFailure(error) { return .tlsFailed(failure) }
            return .failed(AsyncHTTPTransport.plain(error, url: url), kind: AsyncHTTPTransport.kind(of: error))
        }
    }

    /// Whether `error` says the endpoint's configuration is wrong: a refused connection (no
    /// server on that port) or a host no resolver knows. Anything else may pass by itself.
    package static func kind(of error: Error) -> EndpointErrorKind {
        if let error = error as? IOError, error.errnoCode == ECONNREFUSED { return .configuration }
        if error is SocketAddressError { return .configuration }
        if let error = error as? NIOConnectionError {
            if error.dnsAError != nil || error.dnsAAAAError != nil, error.connectionErrors.isEmpty { return .configuration }
            if let first = error.connectionErrors.first { return kind(of: first.error) }
        }
        return .temporary
    }

    /// What went wrong with an exchange with `url`, in our words: "cannot connect to
    /// HOST:PORT: connection refused", "no answer within the timeout", never a library's type
    /// names.
    package static func plain(_ error: Error, url: String) -> String {
        guard isConnecting(error), let components = URLComponents(string: url), let host = components.host else { return plain(error) }
        let port = components.port ?? (components.scheme == "https" ? 443 : 80)
        return "cannot connect to \(host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host):\(port): \(plain(error))"
    }

    /// Whether `error` came before any byte was exchanged: no connection was made.
    private static func isConnecting(_ error: Error) -> Bool {
        if let error = error as? IOError { return [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, ETIMEDOUT].contains(error.errnoCode) }
        if let error = error as? HTTPClientError { return error == .connectTimeout }
        return error is NIOConnectionError || error is SocketAddressError
    }

    package static func plain(_ error: Error) -> String {
        if let error = error as? IOError { return ErrorText.posix(error.errnoCode) }
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout, .socksHandshakeTimeout, .tlsHandshakeTimeout: return "no connection within the timeout"
            case .deadlineExceeded, .readTimeout, .writeTimeout: return "no answer within the timeout"
            case .remoteConnectionClosed: return "the server closed the connection"
            case .invalidURL, .emptyHost, .emptyScheme: return "the URL cannot be used"
            default: break
            }
        }
        if error is ChannelError { return "the connection failed" }
        if let error = error as? NIOConnectionError {
            if error.dnsAError != nil || error.dnsAAAAError != nil, error.connectionErrors.isEmpty { return "unknown host" }
            if let first = error.connectionErrors.first { return plain(first.error) }
        }
        if error is SocketAddressError { return "unknown host" }
        if error is NIOTooManyBytesError { return "an answer over 1 MiB" }
        return ErrorText.plain(error)
    }

    /// Why `url` cannot be requested at all, checked before AsyncHTTPClient sees it: NIO traps
    /// on a port beyond 65535 (a URL stored by an earlier version, or edited into the file).
    package static func problem(with url: String) -> String? {
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else {
            return "the URL cannot be used"
        }
        if let port = components.port, !(1...65_535).contains(port) { return "port \(port) is out of range (1 to 65535)" }
        return nil
    }

    /// `url` without its user info, and that user info as a Basic `Authorization` value: a
    /// URL such as `https://alice:PW@host/` means those credentials, which are never sent in
    /// the request line.
    package static func credentials(in url: String) -> (url: String, authorization: String?) {
        guard var components = URLComponents(string: url), let user = components.user else { return (url, nil) }
        let pair = (user.removingPercentEncoding ?? user) + ":" + (components.password.map { $0.removingPercentEncoding ?? $0 } ?? "")
        components.user = nil
        components.password = nil
        return (components.string ?? url, "Basic " + Data(pair.utf8).base64EncodedString())
    }

    /// Up to 1 MiB of `body`.
    /// - Throws: `HTTPClientError.deadlineExceeded` when it is not all there by `deadline`.
    private func collect(_ body: HTTPClientResponse.Body, until deadline: NIODeadline) async throws -> ByteBuffer {
        let left = nanosecondsLeft(until: deadline)
        return try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await body.collect(upTo: 1 << 20) }
            group.addTask {
                await systemTaskSleep(milliseconds: Int64((left + 999_999) / 1_000_000))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let buffer = first else { throw HTTPClientError.deadlineExceeded }
            return buffer
        }
    }

    /// Reads and drops up to 64 KiB of `body`, giving up at `deadline`.
    private func drain(_ body: HTTPClientResponse.Body, until deadline: NIODeadline) async {
        let left = nanosecondsLeft(until: deadline)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = try? await body.collect(upTo: 64 * 1024) }
            group.addTask {
                await systemTaskSleep(milliseconds: Int64((left + 999_999) / 1_000_000))
            }
            await group.next()
            group.cancelAll()
        }
    }

    package func get(_ url: String, headers: [(String, String)], timeoutMilliseconds: Int64, tls: TLSConfiguration?) async -> FetchResponse {
        if let problem = AsyncHTTPTransport.problem(with: url) { return .failed(problem) }
        var http = HTTPClientRequest(url: url)
        http.method = .GET
        http.tlsConfiguration = tls
        for (name, value) in headers { http.headers.add(name: name, value: value) }
        let deadline = deadline(in: timeoutMilliseconds)
        do {
            let response = try await client.execute(http, deadline: deadline)
            let body = try await collect(response.body, until: deadline)
            return .status(Int(response.status.code), body: Array(buffer: body))
        } catch {
            if let failure = TLSFailure(error) { return .tlsFailed(failure) }
            return .failed(AsyncHTTPTransport.plain(error, url: url))
        }
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
