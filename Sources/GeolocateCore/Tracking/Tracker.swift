import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging

/// `geolocate track`: collects fixes from a source, filters them, emits records to the spool
/// and/or a line output, until the log ends, `--count` or `--duration` is reached, or a stop is
/// requested (SIGINT/SIGTERM), committing everything before it returns.
package struct Tracker {
    /// Its `elapsed` times the commit window, the last known location's saves,
    /// transmissions, reconnect backoff and the final commit's deadline.
    package var context: CommandContext
    package var timeZone: TimeZone
    package var stop: StopFlag
    /// Receives each record's line as UTF-8, with its newline, for `--stdout`.
    package var output: ([UInt8]) -> Void
    /// Opens a source: `SourceOpener.withGPSD.open` in the program; the default opens replays only.
    package var openSource: (SourceSpecifier, SourceOpening) throws -> LocationSource
    /// `--transmit-interval`: starts a flush this often (wall clock), beside collection.
    package var transmission: (intervalMilliseconds: Int64, flush: BackgroundFlush)?

    package init(_ context: CommandContext, timeZone: TimeZone = .current, stop: StopFlag = StopFlag(),
                 output: @escaping ([UInt8]) -> Void,
                 openSource: @escaping (SourceSpecifier, SourceOpening) throws -> LocationSource = SourceOpener.replaysOnly.open,
                 transmission: (intervalMilliseconds: Int64, flush: BackgroundFlush)? = nil) {
        self.context = context
        self.timeZone = timeZone
        self.stop = stop
        self.output = output
        self.openSource = openSource
        self.transmission = transmission
    }

    package var settings: Settings { context.settings }
    package var environment: [String: String] { context.environment }
    package var clock: WallClock { context.clock }
    package var elapsed: MonotonicClock { context.elapsed }
    package var logger: Logger { context.logger }

    /// How long one wait on the source lasts before the loop checks for a stop, commits and
    /// checks `--duration`: source time, so log time on a replay.
    static let waitSliceMilliseconds = 50
    /// The most wall time one wait on a replay may block, on silent input or pacing: with the
    /// commit window below, a record is committed within 200 ms whatever the input does.
    static let idleSliceMilliseconds: Int32 = 50
    static let commitWindow: Duration = .milliseconds(150)
    /// How long track waits for gpsd to accept a connection when (re)connecting: a stop is
    /// seen between attempts.
    static let connectTimeoutMilliseconds = 500
    /// How long a stopping track keeps trying a spool another process holds locked; without a
    /// stop, it waits for the lock to go.
    static let finalCommitDeadline: Duration = .milliseconds(500)
    /// How long a spool write waits on another process's lock before track keeps the
    /// records in memory and carries on.
    static let spoolBusyTimeout: Duration = .milliseconds(50)

    /// Runs until the source ends, a limit is reached or a stop is requested.
    /// - Throws: `GeolocateError` for a missing permission (78), a replay file that cannot be
    ///   opened (66/65) or a spool that cannot be written (73).
    package func run(_ request: TrackRequest) throws -> TrackSummary {
        let specifier = try settings.resolvedSource(flag: request.source, environment: environment)
        // A missing replay is the first thing said, whatever the permissions, as trigger says it.
        if case .nmea(let path) = specifier, path != "-", !FileManager.default.fileExists(atPath: path) {
            throw GeolocateError.inputMissing(path: path)
        }
        let permissions = settings.permissionsInForce(flag: request.permission)
        guard Permission.effective(permissions) != nil else {
            throw GeolocateError.permissionRequired(
                "no location permission is granted, so track would collect nothing; to consent, run: geolocate config set permissions fine (or pass --permission fine)")
        }
        let stateDirectory = context.stateDirectory
        Paths.secureStateDirectory(stateDirectory) { logger.warning("\($0)") }
        let device = try settings.fields.wantsDevice ? deviceInfo(stateDirectory: stateDirectory, required: request.toSpool) : nil
        let writer = try request.toSpool ? SpoolWriter(limits: settings.spoolLimits, window: Tracker.commitWindow, elapsed: elapsed, logger: logger) {
            try Spool(stateDirectory: stateDirectory, busyTimeout: Tracker.spoolBusyTimeout, clock: clock)
        } : nil
        let opening = SourceOpening(replaySpeed: request.replaySpeed, responseTimeoutMilliseconds: Tracker.connectTimeoutMilliseconds,
                                    idleMilliseconds: Tracker.idleSliceMilliseconds, clock: clock, elapsed: elapsed, logger: logger)
        // A receiver on a terminal that goes away (unplugged, hung up) is waited for, as gpsd
        // is: its path missing or unreadable then is an outage, not a missing log.
        var openedTerminal = false
        var connection = SourceConnection(name: specifier.description, clock: elapsed, logger: logger) {
            do {
                let source = try openSource(specifier, opening)
                if (source as? NMEAReplaySource)?.isLive == true { openedTerminal = true }
                return source
            } catch let error as GeolocateError where openedTerminal {
                throw SourceError.unavailable("\(specifier): \(error)")
            }
        }
        var run = Run(tracker: self, request: request, permissions: permissions, device: device, writer: writer,
                      pipeline: pipeline(source: specifier),
                      lastKnown: LastKnownStore(stateDirectory: stateDirectory, kind: specifier.isReplay ? .replay : .live, logger: logger),
                      context: DeviceContextReader(environment: environment, fields: settings.fields, clock: elapsed))
        defer { logger.debug("track: \(run.summary)") }
        var now = clock.nowMilliseconds
        var lastSource: LocationSource?
        while !stop.isRequested {
            guard let source = try connection.source() else {
                // gpsd is away: what was emitted before it went still commits on time, and
                // --duration still ends the run.
                now = clock.nowMilliseconds
                try run.tick(now: now)
                if run.isFinished(now: now) { break }
                continue
            }
            var wait = SourceWait.timedOut
            do {
                wait = try source.waitForFix(timeoutMilliseconds: Tracker.waitSliceMilliseconds)
                connection.answered()
            } catch let error as SourceError {
                connection.lost(error)
            }
            lastSource = source
            now = source.currentTime ?? clock.nowMilliseconds
            // A replayed record is never earlier than its fix; a live one is made when its fix
            // arrives, whatever the receiver's clock says (SPEC §3).
            if case .fix(let fix) = wait { try run.observe(fix, now: fix.receivedAt == nil ? max(now, fix.timestamp) : now) }
            try run.tick(now: now)
            if run.isFinished(now: now) || source.hasEnded { break }
        }
        // A stop while the input is idle: its last epoch is whole as far as it came, and is
        // kept (SPEC §4: nothing lost), not left waiting for a sentence that will not come.
        if stop.isRequested, !run.isFinished(now: now), let fix = lastSource?.finishPending() {
            now = max(lastSource?.currentTime ?? clock.nowMilliseconds, fix.timestamp)
            try run.observe(fix, now: now)
        }
        try run.finish(now: now)
        run.summary.input = lastSource?.readSummary
        return run.summary
    }

    /// The run's record pipeline, whose signals compare the first record with the report the
    /// state directory keeps.
    private func pipeline(source: SourceSpecifier) -> RecordPipeline {
        var pipeline = RecordPipeline(context, policy: nil, replay: source.isReplay, reports: .byCaller)
        pipeline.loadPreviousReport()
        return pipeline
    }

    /// The device fields; without a spool, a state directory that cannot keep the device id
    /// is worth a warning, not a failed run (`--stdout --no-spool` needs no state).
    private func deviceInfo(stateDirectory: String, required: Bool) throws -> DeviceInfo {
        do {
            return try DeviceInfo.current(stateDirectory: stateDirectory)
        } catch let error as GeolocateError where !required && !error.isRefusedStateFile {
            logger.warning("\(error.description); records carry no deviceId")
            return DeviceInfo(id: nil, model: DeviceInfo.hardwareModel(), osVersion: DeviceInfo.operatingSystem())
        }
    }

    /// One run's moving parts: filters, the visit detector, the outputs and the counts.
    private struct Run {
        let tracker: Tracker
        let request: TrackRequest
        let permissions: [Permission]
        let device: DeviceInfo?
        let writer: SpoolWriter?
        var pipeline: RecordPipeline
        let lastKnown: LastKnownStore
        let contextReader: DeviceContextReader
        /// The device context last read, and when (elapsed seconds): read at most once a
        /// second, since asking NetworkManager and ModemManager takes milliseconds.
        var context: (value: DeviceContext, at: Double)?
        var emission: EmissionFilter
        var visits: VisitDetector?
        var summary = TrackSummary()
        var started: Int64?
        var latestFix: Fix?
        var lastKnownSaved: Double?
        var lastKnownFailed = false
        /// A file planted where the last known location is kept, which ends the run.
        var refusal: GeolocateError?
        var lastTransmission: Double
        /// `status.json`, for monitoring users: kept with the spool.
        let statusSummary: StatusSummaryWriter?

        init(tracker: Tracker, request: TrackRequest, permissions: [Permission], device: DeviceInfo?, writer: SpoolWriter?,
             pipeline: RecordPipeline, lastKnown: LastKnownStore, context: DeviceContextReader) {
            self.tracker = tracker
            self.request = request
            self.permissions = permissions
            self.device = device
            self.writer = writer
            self.pipeline = pipeline
            self.lastKnown = lastKnown
            contextReader = context
            emission = EmissionFilter(policy: request.policy)
            lastTransmission = tracker.elapsed.nowSeconds
            visits = request.policy.visits.map(VisitDetector.init)
            statusSummary = writer == nil ? nil
                : StatusSummaryWriter(tracker.context)
        }

        mutating func observe(_ fix: Fix, now: Int64) throws {
            summary.fixes += 1
            guard request.policy.window.contains(fix.timestamp, in: tracker.timeZone) else {
                summary.outsideWindow += 1
                return
            }
            guard request.policy.accuracy.accepts(fix) else {
                summary.tooInaccurate += 1
                return
            }
            latestFix = Fix.fresher(latestFix, fix)
            let visit = visits?.observe(fix)
            guard visit != nil || emission.isDue(fix) else { return }
            emission.emitted(fix)
            try emit(fix, context: visit ?? .regular, now: now)
        }

        private mutating func emit(_ fix: Fix, context: LocationContext, now: Int64) throws {
            let mode = CollectionMode.forceCurrent.description
            var device = self.device
            if device != nil, contextReader.wantsAny {
                if self.context.map({ tracker.elapsed.milliseconds(since: $0.at) >= 1000 }) ?? true {
                    self.context = (contextReader.read(), tracker.elapsed.nowSeconds)
                }
                device?.context = self.context?.value ?? DeviceContext()
            }
            let record = try pipeline.makeWaiting(Record(
                action: Record.trackAction, triggeredAt: now, requestedMode: mode, collectionMode: mode,
                fix: fix, permissions: permissions,
                origin: .current, fallbackReason: nil, errorCode: .none, context: context, device: device))
            summary.records += 1
            if request.toStdout { tracker.output(request.format.lineBytes(record, policy: .unrestricted, sender: request.sender)) }
            // Spooled now by the wall clock, whatever the replay's time: retention counts from it.
            try writer?.add(SpoolEntry(record), now: tracker.clock.nowMilliseconds)
        }

        /// Commits due records and, at most once a second, the last known location.
        mutating func tick(now: Int64) throws {
            if started == nil { started = now }
            try writer?.tick(now: tracker.clock.nowMilliseconds)
            if let spool = writer?.spool { statusSummary?.refresh(through: spool) }
            let elapsed = tracker.elapsed
            if let latestFix, lastKnownSaved.map({ elapsed.milliseconds(since: $0) >= 1000 }) ?? true {
                saveLastKnown(latestFix, now: now)
                pipeline.saveLatestReport()
                lastKnownSaved = elapsed.nowSeconds
            }
            if let transmission = tracker.transmission,
               elapsed.milliseconds(since: lastTransmission) >= transmission.intervalMilliseconds {
                transmission.flush.startIfIdle()
                lastTransmission = elapsed.nowSeconds
            }
        }

        /// The last known location is a convenience for later triggers: failing to keep it
        /// is said once and never stops the records. A file planted in its place (SPEC §14)
        /// ends the run once its records are committed (`refusal`, 73).
        private mutating func saveLastKnown(_ fix: Fix, now: Int64) {
            do {
                try lastKnown.update(with: fix, now: now)
            } catch let error as GeolocateError where error.isRefusedStateFile {
                refusal = error
            } catch {
                if !lastKnownFailed { tracker.logger.warning("\(error); the last known location is not kept") }
                lastKnownFailed = true
            }
        }

        func isFinished(now: Int64) -> Bool {
            if refusal != nil || pipeline.refusal != nil { return true }
            if let count = request.policy.count, summary.records >= count { return true }
            if let duration = request.policy.durationMilliseconds, let started, now - started >= duration { return true }
            return false
        }

        mutating func finish(now: Int64) throws {
            if let latestFix { saveLastKnown(latestFix, now: now) }
            pipeline.saveLatestReport()
            // A locked spool is waited for, until a stop asks to give up (after a last try).
            var stopSeen: Double?
            let elapsed = tracker.elapsed
            try writer?.finish(now: tracker.clock.nowMilliseconds) {
                guard tracker.stop.isRequested else { return false }
                let seen = stopSeen ?? elapsed.nowSeconds
                stopSeen = seen
                return elapsed.milliseconds(since: seen) >= Tracker.finalCommitDeadline.milliseconds
            }
            summary.spooled = writer?.committed ?? 0
            summary.expired = writer?.expired ?? 0
            if let spool = writer?.spool { statusSummary?.refresh(force: true, through: spool) }
            // Said after the records are committed: none is lost for it.
            if let refusal = refusal ?? pipeline.refusal { throw refusal }
        }
    }
}
