import Foundation
import GeolocateConfig
import GeolocateModel
import GeolocateSpool
import NIOSSL

/// The entry points the commands call: a whole flush, and one record POSTed at once.
package enum Delivery {
    /// Flushes the spool of the state directory to the configured endpoints, one flush at a time.
    ///
    /// - Parameter waitForTurn: whether to wait while another flush runs; without, that
    ///   flush is left to it and the report is empty (track's own flushes).
    /// - Throws: `GeolocateError.missingSetting` when no endpoint is configured or one of
    ///   `names` is not (78).
    package static func flush(_ context: CommandContext, only names: [String]? = nil, batchSize: Int? = nil, dryRun: Bool = false,
                              waitForTurn: Bool = true, ignoringRetryAfter: Bool = false, role: Sender.Role = .flush,
                              transport: HTTPTransport? = nil, mqtt: MQTTTransport? = nil) async throws -> FlushReport {
        let (settings, stateDirectory, clock, elapsed, logger) = (context.settings, context.stateDirectory, context.clock, context.elapsed, context.logger)
        Paths.secureStateDirectory(stateDirectory) { logger.warning("\($0)") }
        // Without endpoints there may still be records `trigger --post URL` left for their URL.
        let hasWork = try !settings.endpoints.isEmpty
            || (names == nil && !Spool(stateDirectory: stateDirectory, clock: clock).postDestinations().isEmpty)
        guard hasWork else {
            throw GeolocateError.missingSetting(
                "no endpoint is configured in \(context.configPath); add one with: geolocate config set endpoints.NAME.url https://HOST/PATH")
        }
        for name in names ?? [] { _ = try settings.endpoint(named: name, configPath: context.configPath) }
        // Flushes take turns: a second one then finds the first one's records delivered.
        let lockPath = StateFile.flushLock.path(in: stateDirectory)
        guard let lock = try waitForTurn ? FileLock(path: lockPath) : FileLock.ifFree(path: lockPath) else {
            logger.debug("another flush is running; leaving the spool to it")
            return FlushReport(endpoints: [])
        }
        defer { withExtendedLifetime(lock) {} }
        let spool = try Spool(stateDirectory: stateDirectory, clock: clock)
        defer { StatusSummaryWriter(context).refresh(through: spool) }
        var sender = try Sender(settings: settings, stateDirectory: stateDirectory)
        sender.role = role
        var signerProblem: GeolocateError?
        if settings.endpoints.contains(where: { $0.format == .jwt && (names?.contains($0.name) ?? true) }) {
            do {
                sender.signer = try TokenSigner(context)
            } catch let error as GeolocateError {
                signerProblem = error
            }
        }
        var flusher = Flusher(spool: spool, endpoints: settings.endpoints,
                              transport: transport ?? AsyncHTTPTransport(clock: clock, elapsed: elapsed),
                              limits: settings.spoolLimits, clock: clock, logger: logger,
                              policy: OutputPolicy(settings: settings), sender: sender, signerProblem: signerProblem,
                              mqtt: mqtt, ignoresRetryAt: ignoringRetryAfter)
        flusher.mqttVersions = MQTTVersionMemory(stateDirectory: stateDirectory)
        let report: FlushReport
        do {
            report = try await flusher.run(only: names, batchSize: batchSize, dryRun: dryRun)
        } catch {
            await mqtt?.close()
            throw error
        }
        await mqtt?.close()
        return report
    }

    /// Where `trigger --post URL` or `--endpoint NAME` sends its record.
    package enum Target: Sendable {
        case url(String)
        case endpoint(String)
    }

    /// What became of a `trigger --post` or `--endpoint` record.
    package enum PostOutcome: Sendable, Equatable {
        /// The endpoint answered 2xx; the record is not kept.
        case delivered
        /// Not delivered, for `reason`; the record is in the spool for the next flush.
        case spooled(reason: String)
        /// Not sent and not kept: the endpoint's format has no message for the record
        /// (owntracks and osmand, for a record without a location).
        case notCarried
    }

    /// How long `trigger --post` waits for another process's lock on the spool: a login hook
    /// must not stall; the record is sent anyway.
    package static let postSpoolBusyTimeout: Duration = .seconds(1)

    /// POSTs `record` once, spooled first for the next flush to the same destination (a URL is
    /// remembered with the record) and taken out again when the POST delivered it: a record
    /// that was printed is kept whatever happens to the POST (a kill, a hang, a refusal).
    /// `timeoutMilliseconds` shortens the endpoint's own timeout (a login hook's time left).
    /// - Returns: whether the POST delivered the record or it waits in the spool.
    /// - Throws: `GeolocateError` for an unknown endpoint (78), or a spool that could not take
    ///   the record when the POST did not deliver it either (73, 75).
    package static func post(_ record: Record, to target: Target, _ context: CommandContext,
                             role: Sender.Role, transport: HTTPTransport? = nil, mqtt: MQTTTransport? = nil,
                             timeoutMilliseconds: Int64? = nil) async throws -> PostOutcome {
        let (settings, stateDirectory, clock, elapsed, logger) = (context.settings, context.stateDirectory, context.clock, context.elapsed, context.logger)
        let transport = transport ?? AsyncHTTPTransport(clock: clock, elapsed: elapsed)
        var endpoint: Endpoint
        switch target {
        case .url(let url):
            endpoint = .post(to: url)
        case .endpoint(let name):
            endpoint = try settings.endpoint(named: name, configPath: context.configPath)
        }
        // The record's own device id first: a state directory that cannot be used must not stop
        // the send of a record already made (the spool says its own failure below).
        var deviceID = record.device?.id
        if deviceID == nil {
            do { deviceID = try DeviceInfo.deviceID(stateDirectory: stateDirectory) } catch {
                logger.warning("\(ErrorText.plain(error)); the record goes without a device id")
            }
        }
        var sender = Sender(deviceID: deviceID, trackerID: settings[ConfigKey.owntracksTrackerID])
        sender.role = role
        let policy = OutputPolicy(settings: settings)
        let record = policy.applied(to: record)
        // A key that cannot sign leaves the record in the spool, and its problem is the
        // endpoint's last error, where status shows it (the gate's decision stands).
        var signerProblem: GeolocateError?
        if endpoint.format == .jwt {
            do { sender.signer = try TokenSigner(context) } catch let error as GeolocateError {
                signerProblem = error
            }
        }
        let broker: MQTTBroker?
        let tls: TLSConfiguration?
        do {
            endpoint = try endpoint.readingSecretFiles()
            // What flush found is used, never written here: the gate runs as root, and a file
            // it made would be root's in the service user's directory.
            broker = MQTTVersionMemory(stateDirectory: stateDirectory).applied(to: try endpoint.broker(as: sender), endpoint: endpoint.name)
            tls = try endpoint.tlsConfiguration()
        } catch let error as GeolocateError {
            throw GeolocateError.missingSetting("endpoint \(endpoint.name): \(error.description)")
        }
        if broker != nil && mqtt == nil { throw GeolocateError.missingSetting("endpoint \(endpoint.name): this build of geolocate has no MQTT") }
        guard endpoint.format.carries(record) else { return .notCarried }
        var spooled: (spool: Spool, seq: Int64)?
        var notSpooled: GeolocateError?
        // The summary is rewritten as soon as the record is spooled (a login's deadline may
        // end the process while the send still waits), and again with the send's outcome.
        let summary = StatusSummaryWriter(context)
        defer { if let spool = spooled?.spool { summary.refresh(force: true, through: spool) } }
        do {
            let spool = try Spool(stateDirectory: stateDirectory, busyTimeout: postSpoolBusyTimeout, clock: clock)
            spooled = (spool, try spool.enqueue(SpoolEntry(record, destination: endpoint.name),
                                                now: clock.nowMilliseconds, limits: settings.spoolLimits))
            summary.refresh(through: spool)
        } catch let error as GeolocateError {
            notSpooled = error
        }
        let failure: String
        let kind: EndpointErrorKind
        let verdict: DeliveryVerdict
        if let signerProblem {
            verdict = .endpointRefused(signerProblem.description)
        } else if let broker, let mqtt {
            let message = MQTTMessage(id: record.id, payload: try endpoint.format.message(for: record, policy: policy, sender: endpoint.signing(as: sender)))
            let outcome = await mqtt.publish([message], to: broker, awaitingAll: true)
            await mqtt.close()
            if outcome.connectedWith == .v311 && broker.version == .v5 {
                logger.info("endpoint \(endpoint.name): the broker at \(broker.host):\(broker.port) does not take MQTT 5; it got 3.1.1")
            }
            switch outcome.failure {
            case nil: verdict = .delivered
            case .unreachable(let reason): verdict = .retry(reason, retryAfterMilliseconds: nil)
            case .refused(let reason): verdict = .endpointRefused(reason)
            }
        } else {
            var request = try endpoint.request(for: [record], policy: policy, sender: sender,
                                           idempotencyKey: IdempotencyKey.of([record.id], to: endpoint), tls: tls)
            if let timeoutMilliseconds { request.timeoutMilliseconds = max(1, min(request.timeoutMilliseconds, timeoutMilliseconds)) }
            verdict = DeliveryVerdict(await transport.post(request), from: endpoint)
        }
        switch verdict {
        case .delivered:
            if let spooled {
                // Left in the spool, it would only be sent again under the same key.
                do {
                    try spooled.spool.remove(seq: spooled.seq, now: clock.nowMilliseconds, limits: settings.spoolLimits)
                    try spooled.spool.noteSuccess(endpoint: endpoint.name, now: clock.nowMilliseconds)
                } catch {
                    logger.debug("\(error)")
                }
            }
            return .delivered
        case .retry(let reason, _, let retryKind):
            failure = reason
            // A server restarting during a login refuses as a wrong port does: it waits the
            // warning age before status --check is CRITICAL.
            kind = retryKind == .configuration ? .unreachable : retryKind
        case .endpointRefused(let reason):
            failure = reason
            kind = .configuration
        case .recordsRefused(let code):
            failure = "HTTP \(code)"
            kind = .temporary
        }
        // `status` shows the endpoint's last error as a flush's would be; the record waits in
        // the spool for the next flush.
        if let spooled {
            do {
                try spooled.spool.noteFailure(endpoint: endpoint.name, error: failure, kind: kind)
            } catch {
                logger.debug("\(error)")
            }
        }
        if let notSpooled {
            // Neither sent nor kept: both are said, the send's reason first.
            logger.warning("the record was not delivered to \(endpoint.redactedURL): \(failure)")
            throw notSpooled
        }
        return .spooled(reason: failure)
    }
}

extension Settings {
    /// The configured endpoint `name`.
    /// - Throws: `GeolocateError.missingSetting` naming the configured ones, or saying how to
    ///   add one when there are none (78).
    package func endpoint(named name: String, configPath: String) throws -> Endpoint {
        guard let endpoint = endpoints.first(where: { $0.name == name }) else {
            guard !endpoints.isEmpty else {
                throw GeolocateError.missingSetting(
                    "no endpoint named '\(name)': none is configured in \(configPath); add one with: geolocate config set endpoints.\(name).url https://HOST/PATH")
            }
            throw GeolocateError.missingSetting(
                "no endpoint named '\(name)' in \(configPath) (configured: \(endpoints.map(\.name).joined(separator: ", ")))")
        }
        return endpoint
    }
}

extension FlushReport {
    /// The `flush --json` document: `{"endpoints":[...]}`.
    package func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

extension Sender {
    /// The sender of this install: its device id (made on first use) and `owntracks.tid`.
    /// - Throws: `GeolocateError.stateNotWritable` when the device id cannot be stored.
    package init(settings: Settings, stateDirectory: String) throws {
        self.init(deviceID: try DeviceInfo.deviceID(stateDirectory: stateDirectory), trackerID: settings[ConfigKey.owntracksTrackerID])
    }
}
