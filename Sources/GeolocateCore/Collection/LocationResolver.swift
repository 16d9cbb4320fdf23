import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging

/// What the collection mode decided: a fix or none, where it came from, and why.
package struct LocationDecision: Sendable, Equatable {
    package var fix: Fix?
    package var origin: LocationOrigin?
    package var fallbackReason: FallbackReason?
    package var errorCode: LocationErrorCode
    /// When the location was decided, the record's `triggeredAt`: the source's time (the
    /// log's on a replay) when the query ended; on a replay never earlier than the fix.
    package var now: Int64
    /// The fix's age at `now` (`ageMs`): from its arrival for a live fix (`FixAge`).
    package var age: Int64?
}

/// Applies a collection mode to a source and the last known location (SPEC §3 mode table).
///
/// Last known is the freshest of geolocate's own store and the fix the source holds
/// (gpsd's `?POLL;`). Every fix seen is offered back to the store.
///
/// Time is the source's: the log's on a replay (opened first, at its first epoch), the clock
/// on gpsd. Ages are `FixAge`'s: a live fix ages from its arrival, whatever the receiver's
/// clock says. A fix is reported `current` only when it is at most `currentMaxAge` old when
/// reported (plus the query's own wait on a replay's clock): `--now`, or a log whose time
/// jumps back, cannot make an older fix current. On a replay, a remembered fix dated after
/// the query is not reported, and a fix from the source dated later moves the moment up to it.
package struct LocationResolver {
    package var source: () throws -> LocationSource
    /// A source already open, used instead of opening one: a replay, opened first to read
    /// its time.
    package var opened: LocationSource?
    package var store: LastKnownStore
    package var clock: WallClock
    /// Measures what connecting to a live source used of the timeout.
    package var elapsed: MonotonicClock
    /// `--now`: fixes "now" for the age computations, whatever the source's time.
    package var nowOverride: Int64?
    /// A fix at most this old counts as current (SPEC §3, `currentMaxAge`).
    package var currentMaxAgeMilliseconds: Int64
    /// A last known location older than this is not a fallback after a timeout or an
    /// unavailable source (`lastKnownMaxAge`); `nil` is unlimited.
    package var lastKnownMaxAgeMilliseconds: Int64?
    /// Where on `elapsed` the query began, when the timeout also bounds wall time: a replay
    /// from a pipe, FIFO or tty, whose writer may send nothing (SPEC §3).
    package var wallStart: Double?
    /// `signals.maxClockSkew`: on a synchronised clock, a held fix dated no further ahead
    /// than this is aged from its date; otherwise its age is unknown (SPEC §3).
    package var heldDateSkewMilliseconds: Int64 = 5_000
    package var logger: Logger

    package init(source: @escaping () throws -> LocationSource, opened: LocationSource? = nil, store: LastKnownStore, clock: WallClock,
                 elapsed: MonotonicClock,
                 nowOverride: Int64?, currentMaxAgeMilliseconds: Int64, lastKnownMaxAgeMilliseconds: Int64? = nil,
                 wallStart: Double? = nil, logger: Logger) {
        self.source = source
        self.opened = opened
        self.store = store
        self.clock = clock
        self.elapsed = elapsed
        self.nowOverride = nowOverride
        self.currentMaxAgeMilliseconds = currentMaxAgeMilliseconds
        self.lastKnownMaxAgeMilliseconds = lastKnownMaxAgeMilliseconds
        self.wallStart = wallStart
        self.logger = logger
    }

    /// Decides the location for an already-resolved mode (never `.default`).
    /// - Throws: only `GeolocateError` for input that cannot be opened (a missing replay file).
    package func decide(mode: CollectionMode, timeoutMilliseconds: Int64) throws -> LocationDecision {
        var attempt = Attempt(resolver: self)
        switch mode {
        case .default, .disabled:
            return LocationDecision(fix: nil, origin: nil, fallbackReason: nil, errorCode: .none,
                                    now: attempt.now(), age: nil)
        case .forceLastKnown:
            let known = try attempt.lastKnown()
            return attempt.report(known, origin: .lastKnown, missing: .unavailable)
        case .lastKnown(let maxAge):
            if let known = try attempt.lastKnown(), let age = attempt.age(of: known), age <= maxAge {
                return attempt.report(known, origin: .lastKnown, missing: .unavailable)
            }
            return try attempt.current(timeoutMilliseconds: timeoutMilliseconds)
        case .forceCurrent:
            return try attempt.current(timeoutMilliseconds: timeoutMilliseconds)
        }
    }

    /// One decision's view of the source: opened at most once, unavailable remembered.
    private struct Attempt {
        let resolver: LocationResolver
        var opened: LocationSource?
        var unavailable: String?
        /// What the source held when asked: asked at most once per decision.
        var held: HeldFix = .notAsked
        let started: Double
        /// The end of a wait that timed out on a replay, which may have read past it.
        var waitEnded: Int64?
        var notedUnknownAge = false
        var notedOlderFix = false

        init(resolver: LocationResolver) {
            self.resolver = resolver
            opened = resolver.opened
            started = resolver.wallStart ?? resolver.elapsed.nowSeconds
        }

        func now() -> Int64 {
            resolver.nowOverride ?? waitEnded ?? opened?.currentTime ?? resolver.clock.nowMilliseconds
        }

        /// The monotonic clock of this boot, unless `--now` moved "now" off the system clock.
        var boot: BootTime? { resolver.nowOverride == nil ? resolver.clock.boot : nil }

        /// `fix`'s age now; `nil` when unknown (`FixAge`).
        func age(of fix: Fix) -> Int64? { FixAge.of(fix, at: now(), boot: boot) }

        mutating func open() throws -> LocationSource? {
            if let opened { return opened }
            if unavailable != nil { return nil }
            do {
                opened = try resolver.source()
            } catch let error as SourceError {
                note(error)
            }
            return opened
        }

        mutating func note(_ error: SourceError) {
            unavailable = error.description
            resolver.logger.warning("\(error.description)")
        }

        enum HeldFix {
            case notAsked
            case answered(Fix?)
        }

        /// The fix the source holds now, asked once.
        mutating func heldFix() throws -> Fix? {
            if case .answered(let fix) = held { return fix }
            var fix: Fix?
            if let source = try open() {
                do { fix = try source.heldFix() } catch let error as SourceError { note(error) }
            }
            // The same fix seen before arrived then, not now: a fix gpsd keeps holding ages.
            if let seen = fix, let stored = try resolver.store.load(now: now()), stored.isSameFix(as: seen),
               stored.arrivalUnknown != true, let first = stored.receivedAt, first <= (seen.receivedAt ?? .max) {
                fix?.receivedAt = first
                fix?.receivedBoot = stored.receivedBoot
                fix?.receivedUptime = stored.receivedUptime
                fix?.arrivalUnknown = nil
            }
            // Otherwise its date stands for its arrival only on a synchronised clock, and only
            // if it is not in the future: a date 25 hours old on an unsynchronised clock, or a
            // week-rollover date, says nothing of when gpsd got the fix (SPEC §3).
            if let seen = fix, seen.arrivalUnknown == true, resolver.clock.isSynchronized == true, resolver.nowOverride == nil,
               seen.timestamp <= now().addingClamped(resolver.heldDateSkewMilliseconds) {
                fix?.arrivalUnknown = nil
            }
            held = .answered(fix)
            if let fix, fix.arrivalUnknown != true { try remember(fix) }
            return fix
        }

        /// The fresher of the stored and the held fix; a stored one whose age is unknown (dated
        /// after the query on a replay; arrived after "now", the clock set back) is not reported.
        mutating func lastKnown() throws -> Fix? {
            var stored = try resolver.store.load(now: now())
            if let fix = stored, age(of: fix) == nil {
                if !notedUnknownAge {
                    let why = fix.receivedAt.map {
                        "arrived at \(TimeText.iso8601($0)), after now (the system clock was set back), so its age is unknown"
                    } ?? "is dated \(TimeText.iso8601(fix.timestamp)), after the query"
                    resolver.logger.notice("the last known location \(why); it is not reported")
                    notedUnknownAge = true
                }
                stored = nil
            }
            // The younger of the two; on a tie the held one, which gpsd may have completed since.
            let held = try heldFix()
            let candidates = [held, stored].compactMap { $0 }.compactMap { fix in age(of: fix).map { (fix, $0) } }
            if let youngest = candidates.min(by: { $0.1 < $1.1 }) { return youngest.0 }
            // A held fix of unknown age is still the last known location, reported with ageMs
            // null: never current, never within an age bound (SPEC §3).
            guard let held, held.arrivalUnknown == true else { return nil }
            resolver.logger.notice("the fix the source holds is dated \(TimeText.iso8601(held.timestamp)) and geolocate did not see it arrive, so its age is unknown: it is reported as the last known location, not current and within no age bound")
            return held
        }

        mutating func current(timeoutMilliseconds: Int64) throws -> LocationDecision {
            if let held = try heldFix(), let age = age(of: held), age <= resolver.currentMaxAgeMilliseconds {
                return report(held, origin: .current, missing: .unavailable)
            }
            if unavailable == nil, let source = try open() {
                do {
                    if let fix = try waitForCurrentFix(from: source, timeoutMilliseconds: timeoutMilliseconds) {
                        // A live fix that came during the wait decides the moment it arrives.
                        return report(fix, origin: .current, missing: .unavailable, at: fix.receivedAt)
                    }
                } catch let error as SourceError {
                    note(error)
                }
            }
            let reason: FallbackReason = unavailable == nil ? .timeout : .unavailable
            var fallback = try lastKnown()
            if let known = fallback, let maxAge = resolver.lastKnownMaxAgeMilliseconds, (age(of: known) ?? .max) > maxAge {
                resolver.logger.notice("the last known location is older than lastKnownMaxAge, so it is not reported")
                fallback = nil
            }
            var decision = report(fallback, origin: .lastKnown,
                                  missing: reason == .timeout ? .timeout : .unavailable)
            decision.fallbackReason = reason
            return decision
        }

        /// Waits up to the timeout for a fix that is current when it comes; older ones (a log
        /// whose time went back, `--now` after the log) are remembered, said once, and waited
        /// past. The timeout is the source's time (the log's on a replay), and also wall time
        /// on live input and under `wallStart`.
        private mutating func waitForCurrentFix(from source: LocationSource, timeoutMilliseconds: Int64) throws -> Fix? {
            let logStart = source.currentTime
            let replay = logStart != nil
            waiting: while true {
                // On a live source, connecting and ?POLL; already used part of the timeout.
                let wallSpent = resolver.elapsed.milliseconds(since: started)
                let logSpent = logStart.map { (source.currentTime ?? $0) - $0 } ?? 0
                let remaining = timeoutMilliseconds - (replay ? logSpent : wallSpent)
                let wallLeft = resolver.wallStart == nil ? Int64.max : timeoutMilliseconds - wallSpent
                guard remaining > 0, wallLeft > 0 else { break waiting }
                switch try source.waitForFix(timeoutMilliseconds: Int(min(remaining, wallLeft))) {
                case .fix(let fix):
                    try remember(fix)
                    let waited = logStart.map { (source.currentTime ?? $0) - $0 } ?? 0
                    // A fix dated after "now" came later in the wait (replay), or just arrived.
                    if (age(of: fix) ?? 0) <= resolver.currentMaxAgeMilliseconds.addingClamped(waited) {
                        return fix
                    }
                    noteOlder(fix)
                case .timedOut:
                    // An idle pipe or paced replay returns early: wait on, within the bounds.
                    if source.hasEnded || !source.lastWaitWasIdle { break waiting }
                }
            }
            if let logStart, source.currentTime != nil {
                waitEnded = min(now(), logStart.addingClamped(timeoutMilliseconds))
            }
            return nil
        }

        private mutating func noteOlder(_ fix: Fix) {
            guard !notedOlderFix else { return }
            notedOlderFix = true
            let age = (age(of: fix)).map { "\(SignalText.duration($0)) old" } ?? "of unknown age"
            resolver.logger.notice("a fix dated \(TimeText.iso8601(fix.timestamp)) is \(age) at the query's time (currentMaxAge is \(SignalText.duration(resolver.currentMaxAgeMilliseconds))), so it is not current; waiting for a newer one")
        }

        /// The decision to report `fix`, made now or at `moment` (a live fix's arrival).
        func report(_ fix: Fix?, origin: LocationOrigin, missing: LocationErrorCode, at moment: Int64? = nil) -> LocationDecision {
            var decided = moment.map { min($0, now()) } ?? now()
            // On a replay the log's clock is the only clock: a fix from later in the wait moves
            // the moment up to it. A live fix never moves the system's time.
            if let fix, fix.receivedAt == nil { decided = max(decided, fix.timestamp) }
            return LocationDecision(fix: fix, origin: fix == nil ? nil : origin, fallbackReason: nil,
                                    errorCode: fix == nil ? missing : .none, now: decided,
                                    age: fix.flatMap { $0.arrivalUnknown == true ? nil : FixAge.of($0, at: decided, boot: moment == nil ? boot : nil) ?? 0 })
        }

        /// Offers `fix` to the store; a store that cannot be written is said, a file planted in
        /// its place ends the query (SPEC §14).
        func remember(_ fix: Fix) throws {
            do { try resolver.store.update(with: fix, now: now()) } catch let error as GeolocateError where error.isRefusedStateFile {
                throw error
            } catch {
                resolver.logger.warning("\(error)")
            }
        }
    }
}

