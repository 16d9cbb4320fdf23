import Crypto
import Foundation
import GeolocateConfig
import GeolocateModel
import GeolocateSpool
import Logging
import NIOSSL

/// What one flush did for one endpoint, as `flush --json` prints it.
package struct EndpointReport: Sendable, Equatable, Encodable {
    package var name: String
    /// The URL without credentials.
    package var url: String
    /// Records delivered in this run.
    package var sent = 0
    /// Records that were in the spool when the flush began and still wait for this endpoint.
    package var pending = 0
    /// Records the endpoint refused in this run (4xx), now in the dead-letter table.
    package var deadLettered = 0
    /// Those records: id, HTTP status and reason.
    package var deadLetters: [DeadLetter] = []
    /// Records expired from the spool past `spool.*` limits, ever (they are never sent).
    package var expired = 0
    /// Records passed over in this run because the endpoint's format has no message for them
    /// (owntracks and osmand, for a record without a location).
    package var skipped = 0
    /// Why the last attempt failed, when it did.
    package var lastError: String?
    /// When a `Retry-After` or the backoff parks the endpoint: it is not tried before this
    /// time (epoch milliseconds), as `status --json` says too.
    package var nextRetryAt: Int64?
    /// Whether this run passed the endpoint over, parked by an earlier one.
    package var parked = false
    /// Set when the endpoint answered that it, not the records, is wrong (401, 403, 404, 405,
    /// 407, a redirect, a broker refusing the credentials, a failed TLS handshake) or is
    /// configured wrongly: its records stay pending and flush exits 78.
    package var endpointError: String?
}

/// A record an endpoint refused.
package struct DeadLetter: Sendable, Equatable, Encodable {
    package var id: String
    package var status: Int?
    package var reason: String
}

/// The whole flush: one report per endpoint.
package struct FlushReport: Sendable, Equatable, Encodable {
    package var endpoints: [EndpointReport]

    /// Whether nothing deliverable is left (exit 0; else 75).
    package var allDelivered: Bool { endpoints.allSatisfy { $0.pending == 0 } }

    /// The endpoints that answered that they, or their credentials, are wrong (exit 78).
    package var misconfigured: [EndpointReport] { endpoints.filter { $0.endpointError != nil } }
}

/// Sends the spool to endpoints (SPEC §5): batches in spool order per endpoint, each endpoint
/// with its own cursor; 2xx delivered; network errors, timeouts, 408, 429 and 5xx retried with
/// backoff (`Retry-After` honoured) and otherwise left pending; any other 4xx splits the batch
/// until the refused records are alone, which go to the dead-letter table. A record leaves the
/// spool when every configured endpoint has it.
package struct Flusher: Sendable {
    package var spool: Spool
    /// Every configured endpoint: deletion waits for all of them, whichever are flushed now.
    package var endpoints: [Endpoint]
    package var transport: HTTPTransport
    /// Publishes to `mqtt://` and `mqtts://` endpoints; `nil` in builds without libmosquitto.
    package var mqtt: MQTTTransport?
    /// The brokers that refused MQTT 5 (the state directory's); `nil`: none kept, and each
    /// fallback is said.
    package var mqttVersions: MQTTVersionMemory?
    /// Who the records are sent as: OsmAnd's `id`, OwnTracks' `tid`, the MQTT client id.
    package var sender = Sender()
    /// Why the device key cannot sign, when it cannot: the jwt endpoints stop with it, as
    /// misconfigured; the others are flushed.
    package var signerProblem: GeolocateError?
    /// Records past these are expired before anything is sent.
    package var limits: SpoolLimits
    package var retry: RetryPolicy
    package var clock: WallClock
    package var logger: Logger
    /// Waits between attempts; replaced in tests to count the waits.
    package var sleep: @Sendable (Int64) async -> Void
    /// `privacy.*` and `fields.*` in force: records are rendered under it when they are sent,
    /// so one spooled under a wider policy leaves without what the present one withholds.
    package var policy = OutputPolicy.unrestricted
    /// `flush --ignore-retry-after`: try endpoints an earlier `Retry-After` or backoff parked.
    package var ignoresRetryAt = false

    package init(spool: Spool, endpoints: [Endpoint], transport: HTTPTransport, limits: SpoolLimits = SpoolLimits(),
                 retry: RetryPolicy = RetryPolicy(),
                 clock: WallClock, logger: Logger,
                 policy: OutputPolicy = .unrestricted, sender: Sender = Sender(), signerProblem: GeolocateError? = nil,
                 mqtt: MQTTTransport? = nil, ignoresRetryAt: Bool = false,
                 sleep: @escaping @Sendable (Int64) async -> Void = { await systemTaskSleep(milliseconds: $0) }) {
        self.spool = spool
        self.policy = policy
        self.sender = sender
        self.signerProblem = signerProblem
        self.mqtt = mqtt
        self.ignoresRetryAt = ignoresRetryAt
        self.endpoints = endpoints
        self.transport = transport
        self.limits = limits
        self.retry = retry
        self.clock = clock
        self.logger = logger
        self.sleep = sleep
    }

    /// Flushes the endpoints named in `only` (all when `nil`).
    /// - Throws: `GeolocateError.missingSetting` for an unknown endpoint name (78, as
    ///   `Settings.endpoint(named:configPath:)`); spool errors.
    package func run(only names: [String]? = nil, batchSize: Int? = nil, dryRun: Bool = false) async throws -> FlushReport {
        var selected = endpoints
        if let names {
            for name in names where !endpoints.contains(where: { $0.name == name }) {
                throw GeolocateError.missingSetting("no endpoint named '\(name)' (configured: \(endpoints.map(\.name).joined(separator: ", ")))")
            }
            selected = endpoints.filter { names.contains($0.name) }
        }
        if !dryRun {
            let expired = try spool.expire(now: clock.nowMilliseconds, limits: limits)
            // A warning, not a note: records that will never arrive are the one loss the spool allows.
            if expired > 0 {
                logger.warning("\(limits.expiryWarning(count: expired))")
            }
        }
        if names == nil {
            // Records `trigger --post URL` could not deliver go to that URL, as it sent them.
            selected += try spool.postDestinations().map(Endpoint.post(to:))
        }
        let horizon = try spool.lastSeq()
        var reports: [EndpointReport] = []
        for endpoint in selected {
            reports.append(try await flush(endpoint, batchSize: batchSize ?? endpoint.batchSize, through: horizon, dryRun: dryRun))
        }
        return FlushReport(endpoints: reports)
    }

    /// Delivers the records up to `horizon` to `endpoint`.
    private func flush(_ configured: Endpoint, batchSize: Int, through horizon: Int64, dryRun: Bool) async throws -> EndpointReport {
        // A --post URL is its own name; reports never show its secrets.
        var report = EndpointReport(name: configured.displayName, url: configured.redactedURL)
        let label = configured.isPostDestination ? "the --post URL \(configured.redactedURL)" : "endpoint \(configured.name) (\(configured.redactedURL))"
        report.expired = try spool.expiredCount()
        report.pending = try spool.pendingCount(for: configured.name, through: horizon, actions: configured.actions)
        var state = try spool.state(of: configured.name)
        if dryRun {
            report.lastError = state.lastError
            return report
        }
        // A stored time past the longest wait an endpoint can ask for (another program's
        // value) parks it for that long at most.
        if !ignoresRetryAt, let stored = state.retryAt, case let retryAt = min(stored, clock.nowMilliseconds + RetryAfter.maximumMilliseconds),
           retryAt > clock.nowMilliseconds, state.retryURL == nil || state.retryURL == configured.url {
            report.lastError = state.lastError
            report.nextRetryAt = retryAt
            report.parked = true
            return report
        }
        let endpoint: Endpoint
        let broker: MQTTBroker?
        let tls: TLSConfiguration?
        do {
            // Secrets in files are read when sending, so a rotated token is used at once.
            // A key that cannot sign stops the jwt endpoints alone: the others need no key.
            if configured.format == .jwt, let signerProblem { throw signerProblem }
            endpoint = try configured.readingSecretFiles()
            let found = try endpoint.broker(as: sender)
            broker = mqttVersions?.applied(to: found, endpoint: endpoint.name) ?? found
            if broker != nil && mqtt == nil { throw GeolocateError.missingSetting("this build of geolocate has no MQTT") }
            tls = try endpoint.tlsConfiguration()
        } catch let error as GeolocateError {
            try stopForConfiguration(configured, error, report: &report)
            return report
        }
        let perRequest = broker == nil && endpoint.format.sendsOneRecordPerRequest ? 1 : max(batchSize, 1)
        // Small requests are read, and marked delivered, many at a time: one spool read and
        // one transaction a request would cost more than the request.
        let limit = broker == nil ? max(perRequest, Flusher.smallestRead) : perRequest
        var unacknowledged = Unacknowledged()
        var stopped = false
        do {
            var next = try prepare(for: endpoint, broker: broker, tls: tls, after: state.deliveredThrough, through: horizon, limit: limit,
                                   perRequest: perRequest)
            while let batch = next {
                // The next batch is read and rendered while this one is on the wire: it starts
                // after this one's last record, whatever the answer, so the spool and the network
                // overlap instead of taking turns.
                async let following = prepare(for: endpoint, broker: broker, tls: tls, after: batch.lastSeq, through: horizon, limit: limit,
                                              perRequest: perRequest)
                let settled: [(Batch, Outcome)]
                if let broker {
                    settled = await publish(batch, after: &unacknowledged, to: broker, endpoint: endpoint)
                } else if case .http(let requests) = batch.payload {
                    settled = [(batch, await send(requests, of: batch, to: endpoint, tls: tls))]
                } else {
                    settled = [(batch, Outcome())]
                }
                for (batch, outcome) in settled where !stopped {
                    stopped = try !settle(outcome, of: batch, endpoint: endpoint, label: label, report: &report, state: &state)
                }
                if stopped {
                    _ = try? await following
                    break
                }
                next = try await following
            }
        } catch let error as GeolocateError where endpoint.format == .jwt && error.exitStatus == .configuration {
            // A key that stops signing mid-flush (a TPM gone, silent or changed) stops its jwt
            // endpoints alone, as a key missing from the start does; the other endpoints go on.
            try stopForConfiguration(configured, error, report: &report)
            stopped = true
        }
        if let broker, !stopped {
            // What is still unacknowledged after the last batch.
            for (batch, outcome) in await publish(nil, after: &unacknowledged, to: broker, endpoint: endpoint) where !stopped {
                stopped = try !settle(outcome, of: batch, endpoint: endpoint, label: label, report: &report, state: &state)
            }
        }
        if report.deadLettered > 0 {
            logger.warning("\(label) refused \(report.deadLettered) records; they are in the dead-letter table (flush --dead-letters)")
        }
        report.pending = try spool.pendingCount(for: endpoint.name, through: horizon, actions: endpoint.actions)
        return report
    }

    /// Stops `endpoint` for a configuration error: kept as its last error with no retry time, as
    /// an endpoint's refusal is, so `status` shows it as one to mend, not to wait out.
    private func stopForConfiguration(_ endpoint: Endpoint, _ error: GeolocateError, report: inout EndpointReport) throws {
        try spool.markFailed(endpoint: endpoint.name, url: endpoint.url, error: error.description, kind: .configuration, retryAt: nil)
        report.lastError = error.description
        report.endpointError = error.description
    }

    /// Marks what `outcome` says of `batch` in the spool and the report; whether the endpoint
    /// goes on (it stops at a failure, which is kept for `status`).
    private func settle(_ outcome: Outcome, of batch: Batch, endpoint: Endpoint, label: String,
                        report: inout EndpointReport, state: inout EndpointState) throws -> Bool {
        var outcome = outcome
        // Damaged records go to the dead letters unsent, and skipped ones pass, with the
        // part of the batch handled.
        if outcome.failure == nil { outcome.handledThrough = batch.lastSeq }
        let handled = outcome.handledThrough ?? 0
        outcome.deadLetters += batch.damaged.filter { $0.seq <= handled }.map { ($0, nil, "damaged in the spool: \($0.damage ?? "")") }
        report.skipped += batch.skipped.filter { $0 <= handled }.count
        if let through = outcome.handledThrough {
            try spool.markDelivered(endpoint: endpoint.name, through: through, delivered: outcome.delivered,
                                    deadLetters: outcome.deadLetters, now: clock.nowMilliseconds, allEndpoints: endpoints.map(\.name), limits: limits)
            state.deliveredThrough = through
            report.sent += outcome.delivered
            report.deadLettered += outcome.deadLetters.count
            report.deadLetters += outcome.deadLetters.map { DeadLetter(id: $0.record.record.id, status: $0.status, reason: $0.reason) }
        }
        guard let failure = outcome.failure else { return true }
        try spool.markFailed(endpoint: endpoint.name, url: endpoint.url, error: failure.message, kind: failure.kind, retryAt: failure.retryAt)
        report.lastError = failure.message
        report.nextRetryAt = failure.retryAt
        if failure.retryAt == nil {
            report.endpointError = failure.message
        } else {
            logger.warning("\(label): \(failure.message); records stay in the spool for the next flush")
        }
        return false
    }

    /// The result of sending some records, in spool order.
    private struct Outcome {
        /// Everything through this `seq` is delivered or dead-lettered.
        package var handledThrough: Int64?
        package var delivered = 0
        package var deadLetters: [(record: PendingRecord, status: Int?, reason: String)] = []
        /// Why sending stopped; `retryAt` is `nil` when the endpoint itself is wrong.
        package var failure: (message: String, retryAt: Int64?, kind: EndpointErrorKind)?
    }

    /// A batch read from the spool: the records to send and what carries them, the damaged
    /// ones, and the `seq`s of those the endpoint's format has no message for.
    private struct Batch: Sendable {
        package var sendable: [PendingRecord]
        /// The `seq` of each sendable record.
        package var seqs: [Int64]
        package var payload: Payload?
        package var damaged: [PendingRecord]
        package var skipped: [Int64]
        /// The `seq` of its last record, sent or not.
        package var lastSeq: Int64

        /// Its MQTT messages, one per sendable record.
        var messages: [MQTTMessage] {
            if case .mqtt(let messages) = payload { return messages }
            return []
        }
    }

    /// A batch rendered for the wire: HTTP requests, each carrying the sendable records in
    /// its range, or one MQTT message per record.
    private enum Payload: Sendable {
        case http([(records: Range<Int>, request: DeliveryRequest)])
        case mqtt([MQTTMessage])
    }

    /// The fewest records read from the spool at once for HTTP, whatever a request carries.
    private static let smallestRead = 100

    /// Up to `limit` of the endpoint's records after `seq`, rendered in requests of
    /// `perRequest` records (MQTT: a message each); `nil` when none are left.
    private func prepare(for endpoint: Endpoint, broker: MQTTBroker?, tls: TLSConfiguration?, after seq: Int64, through horizon: Int64,
                         limit: Int, perRequest: Int) throws -> Batch? {
        let records = try spool.records(for: endpoint.name, after: seq, through: horizon, limit: limit)
        guard let last = records.last else { return nil }
        // One pass: a record is large, and each copy of a thousand of them shows in a flush.
        var sendable: [PendingRecord] = []
        sendable.reserveCapacity(records.count)
        var damaged: [PendingRecord] = []
        var skipped: [Int64] = []
        for pending in records {
            if pending.damage != nil {
                damaged.append(pending)
            } else if endpoint.receives(action: pending.record.action) && endpoint.format.carries(pending.record, under: policy) {
                sendable.append(pending)
            } else {
                skipped.append(pending.seq)
            }
        }
        var payload: Payload?
        if !sendable.isEmpty {
            payload = broker == nil
                ? .http(try stride(from: 0, to: sendable.count, by: perRequest).map { start in
                    let records = start..<min(start + perRequest, sendable.count)
                    return (records, try request(for: sendable[records], to: endpoint, tls: tls))
                })
                : .mqtt(try sendable.map {
                    MQTTMessage(id: $0.record.id, payload: try endpoint.format.message(for: $0.record, policy: policy, sender: endpoint.signing(as: sender)))
                })
        }
        return Batch(sendable: sendable, seqs: sendable.map(\.seq), payload: payload, damaged: damaged, skipped: skipped, lastSeq: last.seq)
    }

    private func request(for records: ArraySlice<PendingRecord>, to endpoint: Endpoint, tls: TLSConfiguration?) throws -> DeliveryRequest {
        let key = IdempotencyKey.of(records.map(\.record.id), to: endpoint)
        return try endpoint.request(for: records.map(\.record), policy: policy, sender: sender, idempotencyKey: key, tls: tls)
    }

    /// Batches published to a broker whose messages are not all acknowledged yet, oldest first.
    private struct Unacknowledged {
        private var batches: [Batch] = []
        /// How many messages of the first batch the broker acknowledged.
        private var acknowledgedOfFirst = 0

        /// Keeps `batch` without its records, which its messages and `seqs` stand for.
        mutating func append(_ batch: Batch) {
            var batch = batch
            batch.sendable = []
            batches.append(batch)
        }

        var isEmpty: Bool { batches.isEmpty }

        /// The messages to publish again after a reconnection, in order.
        var messages: [MQTTMessage] {
            guard let first = batches.first else { return [] }
            return Array(first.messages.dropFirst(acknowledgedOfFirst)) + batches.dropFirst().flatMap(\.messages)
        }

        /// Takes the broker's next `count` acknowledgements, in order: the batches now
        /// acknowledged whole (and those before them with nothing to publish), delivered.
        mutating func acknowledge(_ count: Int) -> [(Batch, Outcome)] {
            var count = count
            var settled: [(Batch, Outcome)] = []
            while let first = batches.first, first.messages.count - acknowledgedOfFirst <= count {
                count -= first.messages.count - acknowledgedOfFirst
                settled.append((first, Outcome(delivered: first.seqs.count)))
                batches.removeFirst()
                acknowledgedOfFirst = 0
            }
            acknowledgedOfFirst += count
            return settled
        }

        /// The first unacknowledged batch, delivered as far as the broker acknowledged it, and
        /// `failure`, which stops the endpoint: the batches after it stay pending.
        func failed(_ failure: (message: String, retryAt: Int64?, kind: EndpointErrorKind)) -> [(Batch, Outcome)] {
            guard let first = batches.first else { return [] }
            let through = acknowledgedOfFirst > 0 ? first.seqs[acknowledgedOfFirst - 1] : nil
            return [(first, Outcome(handledThrough: through, delivered: acknowledgedOfFirst, failure: failure))]
        }
    }

    /// Publishes `batch` to `broker` after the `unacknowledged` ones, or with `nil`, waits
    /// for every acknowledgement: the batches acknowledged whole meanwhile are returned
    /// delivered, in order. A record is delivered only once the broker acknowledged it; a
    /// dropped connection publishes every unacknowledged message again after a backoff, as
    /// a failed HTTP batch is sent again, and ends with the first unacknowledged batch
    /// failed when the tries run out. A broker that refuses the credentials or the topic
    /// stops the endpoint (exit 78).
    private func publish(_ batch: Batch?, after unacknowledged: inout Unacknowledged, to broker: MQTTBroker,
                         endpoint: Endpoint) async -> [(Batch, Outcome)] {
        guard let mqtt else { return [] }
        if let batch { unacknowledged.append(batch) }
        var messages = batch?.messages ?? []
        var settled: [(Batch, Outcome)] = []
        var attempt = 1
        var waited: Int64 = 0
        while true {
            let result = await mqtt.publish(messages, to: broker, awaitingAll: batch == nil)
            if result.connectedWith == .v311 && broker.version == .v5 { noteFallback(of: endpoint, to: broker) }
            if result.acknowledged > 0 { attempt = 1 }
            settled += unacknowledged.acknowledge(result.acknowledged)
            let missing: MQTTFailure? = batch == nil && !unacknowledged.isEmpty ? .unreachable("the broker did not acknowledge every message") : nil
            switch result.failure ?? missing {
            case nil:
                return settled
            case .refused(let reason):
                return settled + unacknowledged.failed((reason, nil, .configuration))
            case .unreachable(let reason):
                if let failure = await backOff(after: reason, attempt: &attempt, waited: &waited, endpoint: endpoint) {
                    return settled + unacknowledged.failed(failure)
                }
                messages = unacknowledged.messages
            }
        }
    }

    /// Says that `broker` refused MQTT 5 and took 3.1.1, once: the state directory keeps it,
    /// and later flushes connect with 3.1.1 at once.
    private func noteFallback(of endpoint: Endpoint, to broker: MQTTBroker) {
        if let memory = mqttVersions {
            if memory.refusedVersion5(endpoint: endpoint.name, broker: broker) { return }
            do { try memory.rememberRefusal(endpoint: endpoint.name, broker: broker) } catch {
                logger.warning("endpoint \(endpoint.name): \(ErrorText.plain(error))")
            }
        }
        logger.notice("""
            endpoint \(endpoint.name): the broker at \(broker.host):\(broker.port) does not take MQTT 5; it gets 3.1.1, \
            from now on at once (endpoints.\(endpoint.name).mqttVersion 3.1.1 says so for good)
            """)
    }

    /// Sends a batch's requests in order, each until delivered, refused or out of tries; the
    /// first that fails stops the rest.
    private func send(_ requests: [(records: Range<Int>, request: DeliveryRequest)], of batch: Batch, to endpoint: Endpoint,
                      tls: TLSConfiguration?) async -> Outcome {
        var outcome = Outcome()
        for (records, request) in requests {
            var waited: Int64 = 0
            let part = await send(batch.sendable[records], to: endpoint, request: request, tls: tls, waited: &waited)
            outcome.handledThrough = part.handledThrough ?? outcome.handledThrough
            outcome.delivered += part.delivered
            outcome.deadLetters += part.deadLetters
            outcome.failure = part.failure
            if part.failure != nil { break }
        }
        return outcome
    }

    /// Sends `records` until delivered, refused or out of tries; `waited` is the batch's waiting
    /// so far, shared with the halves of a refused batch, so splitting never renews it.
    private func send(_ records: ArraySlice<PendingRecord>, to endpoint: Endpoint, request prepared: DeliveryRequest? = nil,
                      tls: TLSConfiguration?, waited: inout Int64) async -> Outcome {
        let request: DeliveryRequest
        do {
            request = try prepared ?? self.request(for: records, to: endpoint, tls: tls)
        } catch {
            // Only a jwt endpoint's key can fail to render a half of a batch it rendered whole.
            return Outcome(handledThrough: nil, failure: (ErrorText.plain(error), nil, .configuration))
        }
        var attempt = 1
        while true {
            let message: String
            let retryAfter: Int64?
            let kind: EndpointErrorKind
            switch DeliveryVerdict(await transport.post(request), from: endpoint) {
            case .delivered:
                return Outcome(handledThrough: records.last?.seq, delivered: records.count)
            case .recordsRefused(let code):
                return await isolate(records, status: code, to: endpoint, tls: tls, waited: &waited)
            case .endpointRefused(let reason):
                return Outcome(failure: (reason, nil, .configuration))
            case .retry(let reason, let after, let failureKind):
                message = reason
                retryAfter = after
                kind = failureKind
                if after == RetryAfter.maximumMilliseconds {
                    logger.warning("endpoint \(endpoint.displayName) asked to wait a day or more (Retry-After); it is parked for 24 h at most (flush --ignore-retry-after tries at once)")
                }
            }
            if let failure = await backOff(after: message, kind: kind, attempt: &attempt, waited: &waited, retryAfter: retryAfter, endpoint: endpoint) {
                return Outcome(failure: failure)
            }
        }
    }

    /// Waits before the next attempt after a transient failure, with backoff (or the
    /// endpoint's `Retry-After`); returns the failure to report instead when the tries or the
    /// batch's waiting time are used up.
    private func backOff(after message: String, kind: EndpointErrorKind = .temporary, attempt: inout Int, waited: inout Int64,
                         retryAfter: Int64? = nil, endpoint: Endpoint) async -> (message: String, retryAt: Int64?, kind: EndpointErrorKind)? {
        let wait = retryAfter ?? retry.delay(afterAttempt: attempt)
        if attempt >= retry.maxAttempts || waited + wait > retry.maxWaitMilliseconds {
            return ("\(message) after \(attempt) attempt\(attempt == 1 ? "" : "s")", clock.nowMilliseconds + wait, kind)
        }
        logger.debug("endpoint \(endpoint.displayName): \(message); attempt \(attempt + 1) in \(wait) ms")
        await sleep(wait)
        waited += wait
        attempt += 1
        return nil
    }

    /// A refused batch split in halves until each refused record is alone; the rest is delivered.
    private func isolate(_ records: ArraySlice<PendingRecord>, status: Int, to endpoint: Endpoint, tls: TLSConfiguration?,
                         waited: inout Int64) async -> Outcome {
        guard records.count > 1 else {
            return Outcome(handledThrough: records.last?.seq, deadLetters: records.map { ($0, status, "HTTP \(status)") })
        }
        let middle = records.startIndex + records.count / 2
        var outcome = await send(records[..<middle], to: endpoint, tls: tls, waited: &waited)
        guard outcome.failure == nil else { return outcome }
        let second = await send(records[middle...], to: endpoint, tls: tls, waited: &waited)
        outcome.handledThrough = second.handledThrough ?? outcome.handledThrough
        outcome.delivered += second.delivered
        outcome.deadLetters += second.deadLetters
        outcome.failure = second.failure
        return outcome
    }
}
