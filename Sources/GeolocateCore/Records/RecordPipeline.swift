import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import Logging

/// The one way a collected record becomes what geolocate prints, spools or sends: the
/// permission's precision, `privacy.*` (the address), signals against the previous report,
/// the policy decision, then the output policy (SPEC §3.1, §6, §10).
///
/// trigger and track make their records through it, so neither can leave out a step or take
/// them in another order: the country signals compare needs the address, the policy weighs the
/// signals, and the output policy comes last because it withholds what the steps before it
/// still read. Flush and export take a record as it was made and apply only the output policy
/// in force when it leaves (`OutputPolicy.applied`), which narrows it and never reruns a step:
/// signals compare with the report before the record, which is gone by then.
package struct RecordPipeline {
    /// How the previous report signals compare with is kept.
    package enum Reports: Sendable {
        /// Read before and written after each record, under the report's lock: trigger's one record.
        case eachRecord
        /// Read once (`loadPreviousReport`) and written when the caller asks (`saveLatestReport`):
        /// track's stream, where a write per record would cost more than the record.
        case byCaller
    }

    package let privacy: RecordPrivacy
    /// What any output may show: applied last here, and again by flush and export.
    package let output: OutputPolicy
    /// The decision records carry (`trigger --policy`); `nil` without one.
    package let policy: LocationPolicy?
    /// `signals.enabled`: records carry their signals. A policy weighs them either way.
    private let showsSignals: Bool
    private let reports: Reports
    private var signals: SignalDetector?
    /// When a report is made (`PreviousReport.madeAt`), so of two processes' reports the later wins.
    private let clock: WallClock

    /// The pipeline of the command's settings, keeping its previous report in its state directory.
    /// - Parameter replay: whether the records come from a replayed log, whose reports are
    ///   kept apart from live ones (a test log must never make a real login look like a jump).
    /// - Parameter actionDeadline: how long the previous report's lock is waited for (`SignalDetector.actionDeadline`).
    package init(_ context: CommandContext, policy: LocationPolicy?, replay: Bool, reports: Reports, actionDeadline: Deadline? = nil) {
        let (settings, stateDirectory, clock, elapsed, logger) = (context.settings, context.stateDirectory, context.clock, context.elapsed, context.logger)
        privacy = RecordPrivacy(settings: settings, environment: context.environment, stateDirectory: stateDirectory,
                                clock: clock, elapsed: elapsed, logger: logger)
        output = OutputPolicy(settings: settings)
        self.policy = policy
        showsSignals = SignalDetector.isEnabled(settings)
        self.reports = reports
        self.clock = clock
        if showsSignals || policy != nil {
            signals = SignalDetector(settings: settings, stateDirectory: stateDirectory, replay: replay,
                                     clockSynchronized: replay ? nil : clock.isSynchronized, clock: elapsed, logger: logger)
            signals?.actionDeadline = actionDeadline
        }
    }

    /// `collected` as it may leave the device, its street address awaited: trigger's record.
    /// - Throws: `GeolocateError.stateFileRefused` (73) when a link, FIFO or another user's
    ///   file is where the previous report is kept (SPEC §14).
    package mutating func make(_ collected: Record) async throws -> Record {
        var record = collected
        RecordPipeline.limitToPermission(&record)
        record = await privacy.apply(to: record)
        finish(&record)
        if let refusal { throw refusal }
        return record
    }

    /// A link, FIFO or another user's file found where the previous report is kept: track
    /// ends on it once its records are committed; `make` throws it.
    package var refusal: GeolocateError? { signals?.refusal }

    /// `make` for a caller outside Swift concurrency (track's loop): it blocks for the street
    /// geocoder only when records ask for one.
    ///
    /// Each step changes the record in place: a record is about a kilobyte, and copying it
    /// between the steps was a tenth of a track.
    package mutating func makeWaiting(_ collected: consuming Record) throws -> Record {
        var record = collected
        RecordPipeline.limitToPermission(&record)
        try privacy.applyWaiting(to: &record)
        finish(&record)
        return record
    }

    /// Reads the stored previous report, which the first record is compared with (`.byCaller`).
    package mutating func loadPreviousReport() {
        let now = clock.nowMilliseconds
        signals?.loadPrevious(now: now)
    }

    /// Keeps the last report made here, unless another process has kept a later one (`.byCaller`).
    package mutating func saveLatestReport() {
        signals?.saveLatest()
    }

    /// Snaps `record`'s fix to a 2 km cell under a coarse permission, before anything reads it
    /// (snapping a snapped fix leaves it where it is).
    static func limitToPermission(_ record: inout Record) {
        guard Permission.effective(record.permissions) == .coarse, let fix = record.fix else { return }
        record.fix = CoarseLocation.coarsen(fix)
    }

    /// Signals, the policy decision and the output policy, on the addressed `record`; the
    /// detector is moved out and back, never copied (it holds the thresholds' settings).
    private mutating func finish(_ record: inout Record) {
        var country: String?
        if record.fix != nil, var detector = signals.take() {
            country = privacy.signalCountry(for: record)
            let now = clock.nowMilliseconds
            switch reports {
            case .eachRecord: detector.annotateAndSave(&record, country: country, now: now, boot: clock.boot)
            case .byCaller: detector.annotate(&record, country: country, now: now, boot: clock.boot)
            }
            signals = detector
        }
        if let policy {
            // Without the previous report impossible travel cannot be judged, so only a denial
            // stands (SPEC §10.1); under --pam the hook hands the rest to policy.onError.
            let decided = policy.decide(record: record, country: country)
            record.policy = signals?.unreadable == nil || record.fix == nil || decided.decision == .deny
                ? decided : PolicyResult(decision: .undetermined, rule: .previousUnreadable)
        }
        if !showsSignals { record.signals = nil }
        output.apply(to: &record)
    }
}
