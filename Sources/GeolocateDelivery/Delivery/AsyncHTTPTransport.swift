import AsyncHTTPClient
import Foundation
import GeolocateModel
import GeolocateSpool
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

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
