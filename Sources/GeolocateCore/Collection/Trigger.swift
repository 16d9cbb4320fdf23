import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging

/// `geolocate trigger`: resolves each setting (flag, else config, else built-in), applies the
/// collection mode and makes the record.
package struct Trigger {
    package var context: CommandContext
    /// Opens a source: `SourceOpener.withGPSD.open` in the program; the default opens replays only.
    package var openSource: (SourceSpecifier, SourceOpening) throws -> LocationSource

    package init(_ context: CommandContext,
                 openSource: @escaping (SourceSpecifier, SourceOpening) throws -> LocationSource = SourceOpener.replaysOnly.open) {
        self.context = context
        self.openSource = openSource
    }

    package var settings: Settings { context.settings }
    private var environment: [String: String] { context.environment }
    private var clock: WallClock { context.clock }
    /// Elapsed time on a live source (see `LocationResolver.elapsed`).
    private var elapsed: MonotonicClock { context.elapsed }
    private var logger: Logger { context.logger }

    /// Makes the record for one event, with the address and fields `privacy.*` and `fields.*` allow.
    /// - Throws: `GeolocateError` for input that cannot be opened (missing replay file: 66).
    package func run(_ request: TriggerRequest) async throws -> Record {
        let stateDirectory = context.stateDirectory
        // Under a policy, one deadline for the query and the previous report's lock (SPEC §10.1),
        // from when the action began (the gate's start), so the lock is never waited for past
        // it; without one, signals never delay a record (the detector's 200 ms).
        let timeout = resolveTimeout(request.timeoutMilliseconds, action: request.action)
        let deadline = Deadline(milliseconds: timeout - elapsed.milliseconds(since: request.startedAt ?? elapsed.nowSeconds), clock: elapsed)
        Paths.secureStateDirectory(stateDirectory) { logger.warning("\($0)") }
        // A bad zones file is refused before anything is collected.
        let policy = try LocationPolicy.applies(to: request.action, flag: request.policy, settings: settings)
            ? LocationPolicy(settings: settings) : nil
        var collected = try await SourceThread.run { try self.collect(request, stateDirectory: stateDirectory, policy: policy) }
        collected.subject = request.subject
        var pipeline = RecordPipeline(context, policy: policy, replay: collected.fix?.isReplayed ?? false, reports: .eachRecord,
                                      actionDeadline: policy == nil ? nil : deadline)
        let record = try await pipeline.make(collected)
        StatusSummaryWriter(context).refresh()
        return record
    }

    /// The record as the collection mode decides it, before privacy.
    private func collect(_ request: TriggerRequest, stateDirectory: String, policy: LocationPolicy?) throws -> Record {
        try Trigger.validate(action: request.action)
        var mode = resolveMode(request.mode, action: request.action)
        // Under a policy a remembered fix older than policy.maxAge is not taken without asking
        // the source first (SPEC §3): the decision rests on the freshest fix there is.
        if let policy, case .lastKnown(let maxAge) = mode, maxAge > policy.maxAgeMilliseconds {
            mode = .lastKnown(maxAgeMilliseconds: policy.maxAgeMilliseconds)
        }
        let permissions = resolvePermissions(request.permission)
        let source = try resolveSource(request.source)
        // A decision's time is the system's: `--now` would make an old fix from a live source
        // fresh (SPEC §3). Replays keep it, for tests.
        if request.now != nil, policy != nil, !source.isReplay {
            throw GeolocateError.usage("--now is for tests of replays: a policy decision on a live source (\(source)) takes the system's time")
        }
        let timeout = resolveTimeout(request.timeoutMilliseconds, action: request.action)
        let wallStart = elapsed.nowSeconds
        // gpsd must connect and answer ?POLL; within a second, or the timeout when shorter.
        var opening = SourceOpening(
            replaySpeed: request.replaySpeed,
            responseTimeoutMilliseconds: Int(min(Defaults.gpsdResponseTimeoutMilliseconds, max(timeout, 100))),
            // `--now` is the system clock's time for a live source's arrivals too.
            clock: request.now.map(FixedClock.init) ?? clock, elapsed: elapsed, logger: logger)
        // A pipe, FIFO or tty may send nothing: the timeout bounds the wall time too (SPEC §3).
        var boundsWallTime = false
        if case .nmea(let path) = source, NMEAReplaySource.isLiveInput(path) {
            boundsWallTime = true
            opening.idleMilliseconds = Trigger.liveInputSliceMilliseconds
            opening.readAheadMilliseconds = timeout
        }
        // A replay is opened first, whatever the mode and permissions: its time is the record's
        // (triggeredAt is the log's), and a missing or non-NMEA file is an error (66, 65).
        var replay: LocationSource?
        if case .nmea = source {
            let opened = try openSource(source, opening)
            _ = try opened.startTime()
            replay = opened
        }
        guard Permission.effective(permissions) != nil else {
            logger.notice("no location permission is granted, so the record has no location; to consent, run: geolocate config set permissions fine")
            return Record(action: request.action, triggeredAt: request.now ?? replay?.currentTime ?? clock.nowMilliseconds,
                          requestedMode: request.mode.description, collectionMode: mode.description, fix: nil, permissions: [],
                          origin: nil, fallbackReason: nil, errorCode: .permissionDenied)
        }
        // A receiver on a terminal is live input: its fixes are remembered with gpsd's.
        let storeKind: LastKnownStore.Kind = replay.map { ($0 as? NMEAReplaySource)?.isLive == true ? .live : .replay } ?? .live
        var resolver = LocationResolver(
            source: { try openSource(source, opening) }, opened: replay,
            store: LastKnownStore(stateDirectory: stateDirectory, kind: storeKind, logger: logger), clock: clock,
            elapsed: elapsed, nowOverride: request.now,
            currentMaxAgeMilliseconds: settings[ConfigKey.currentMaxAge],
            lastKnownMaxAgeMilliseconds: resolveLastKnownMaxAge(action: request.action),
            wallStart: boundsWallTime ? wallStart : nil, logger: logger)
        resolver.heldDateSkewMilliseconds = settings[ConfigKey.signalsMaxClockSkew]
        let decision = try resolver.decide(mode: mode, timeoutMilliseconds: timeout)
        if let read = replay?.readSummary { logger.debug("\(read)") }
        var record = Record(action: request.action, triggeredAt: decision.now, requestedMode: request.mode.description,
                            collectionMode: mode.description, fix: decision.fix, permissions: permissions,
                            origin: decision.origin, fallbackReason: decision.fallbackReason,
                            errorCode: decision.errorCode)
        record.measuredAge = decision.age
        return record
    }

    /// How long a read of a pipe, FIFO or tty waits before the query checks its wall time.
    static let liveInputSliceMilliseconds: Int32 = 20

    /// The mode to apply: an explicit mode, else `actions.NAME.mode`, else the built-in table,
    /// else `defaultInterval`, else `force-current`.
    package func resolveMode(_ requested: CollectionMode, action: String) -> CollectionMode {
        if requested != .default { return requested }
        let mode = settings[ConfigKey.actionMode, name: action]
        return mode == .default ? settings[ConfigKey.defaultInterval] : mode
    }

    /// The query timeout: `--timeout`, else `actions.NAME.timeout`, else
    /// `triggerActionQueryTimeout`, else 1500 ms.
    package func resolveTimeout(_ flag: Int64?, action: String) -> Int64 {
        flag ?? settings[ConfigKey.actionTimeout, name: action] ?? settings[ConfigKey.queryTimeout]
    }

    /// The oldest last-known fallback: `actions.NAME.lastKnownMaxAge`, else `lastKnownMaxAge`,
    /// else unlimited (`nil`).
    package func resolveLastKnownMaxAge(action: String) -> Int64? {
        settings[ConfigKey.actionLastKnownMaxAge, name: action] ?? settings[ConfigKey.lastKnownMaxAge]
    }

    /// The permissions in force: `--permission`, else config `permissions`, else none.
    package func resolvePermissions(_ flag: [Permission]?) -> [Permission] {
        settings.permissionsInForce(flag: flag)
    }

    /// The source: `--source`/`--replay`, else `$GEOLOCATE_SOURCE`, else config `source`, else gpsd.
    package func resolveSource(_ flag: SourceSpecifier?) throws -> SourceSpecifier {
        try settings.resolvedSource(flag: flag, environment: environment)
    }

    /// Action names are what scripts pass through: letters, digits, `_` and `-`, up to 64; no
    /// `.`, which separates the parts of a config key (`actions.NAME.mode`).
    package static func validate(action: String) throws {
        guard isPlainName(action) else {
            throw GeolocateError.usage("invalid action name '\(action)' (\(plainNameRule), such as login)")
        }
    }
}
