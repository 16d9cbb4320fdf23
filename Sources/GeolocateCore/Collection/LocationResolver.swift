import Logging

/// Why the reported location is not a current one.
public enum FallbackReason: String, Sendable, Codable {
    /// No fix arrived within the query timeout.
    case timeout
    /// The source could not be reached.
    case unavailable
}

/// Whether the reported location was queried now or remembered.
public enum LocationOrigin: String, Sendable, Codable {
    case current
    case lastKnown = "last_known"
}

/// Veridium error codes carried in every record.
public enum LocationErrorCode: Int, Sendable, Codable {
    case none = 0
    case geocodingFailed = 1053
    case unavailable = 1054
    case permissionDenied = 1055
    case timeout = 1056
}

/// What the collection mode decided: a fix or none, where it came from, and why.
public struct LocationDecision: Sendable, Equatable {
    public var fix: Fix?
    public var origin: LocationOrigin?
    public var fallbackReason: FallbackReason?
    public var errorCode: LocationErrorCode
    /// When the location was decided, the record's `triggeredAt`: the source's time (the
    /// log's on a replay) when the query ended, never earlier than the reported fix.
    public var now: Int64
}

/// Applies a collection mode to a source and the last known location (SPEC §3 mode table).
///
/// Last known is the freshest of geolocate's own store and the fix the source holds
/// (gpsd's `?POLL;`). Every fix seen is offered back to the store.
///
/// Time is the source's: the log's on a replay (opened first, at its first epoch), the clock
/// on gpsd. The decision is made at the query's start, after a current fix arrives, or at
/// the end of the timeout, and no reported fix is later than that moment: a remembered fix
/// dated later (from a later part of a replayed log) is not reported, and a fix from the
/// source dated later (a receiver ahead of the system clock) moves the moment up to it.
public struct LocationResolver {
    public var source: () throws -> LocationSource
    /// A source already open, used instead of opening one: a replay, opened first to read
    /// its time.
    public var opened: LocationSource?
    public var store: LastKnownStore
    public var clock: WallClock
    /// Measures what connecting to a live source used of the timeout.
    public var elapsed: MonotonicClock
    /// `--now`: fixes "now" for the age computations, whatever the source's time.
    public var nowOverride: Int64?
    /// A held fix at most this old counts as current (SPEC §3, `currentMaxAge`).
    public var currentMaxAgeMilliseconds: Int64
    /// A last known location older than this is not a fallback after a timeout or an
    /// unavailable source (`lastKnownMaxAge`); `nil` is unlimited.
    public var lastKnownMaxAgeMilliseconds: Int64?
    public var logger: Logger

    public init(source: @escaping () throws -> LocationSource, opened: LocationSource? = nil, store: LastKnownStore, clock: WallClock,
                elapsed: MonotonicClock = SystemMonotonicClock(),
                nowOverride: Int64?, currentMaxAgeMilliseconds: Int64, lastKnownMaxAgeMilliseconds: Int64? = nil,
                logger: Logger) {
        self.source = source
        self.opened = opened
        self.store = store
        self.clock = clock
        self.elapsed = elapsed
        self.nowOverride = nowOverride
        self.currentMaxAgeMilliseconds = currentMaxAgeMilliseconds
        self.lastKnownMaxAgeMilliseconds = lastKnownMaxAgeMilliseconds
        self.logger = logger
    }

    /// Decides the location for an already-resolved mode (never `.default`).
    /// - Throws: only `GeolocateError` for input that cannot be opened (a missing replay file).
    public func decide(mode: CollectionMode, timeoutMilliseconds: Int64) throws -> LocationDecision {
        var attempt = Attempt(resolver: self)
        switch mode {
        case .default, .disabled:
            return LocationDecision(fix: nil, origin: nil, fallbackReason: nil, errorCode: .none,
                                    now: attempt.now())
        case .forceLastKnown:
            let known = try attempt.lastKnown()
            return attempt.report(known, origin: .lastKnown, missing: .unavailable)
        case .lastKnown(let maxAge):
            if let known = try attempt.lastKnown(), attempt.now().subtractingClamped(known.timestamp) <= maxAge {
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
        var notedLaterFix = false

        init(resolver: LocationResolver) {
            self.resolver = resolver
            opened = resolver.opened
            started = resolver.elapsed.nowSeconds
        }

        func now() -> Int64 {
            resolver.nowOverride ?? waitEnded ?? opened?.currentTime ?? resolver.clock.nowMilliseconds
        }

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
            held = .answered(fix)
            if let fix { remember(fix) }
            return fix
        }

        mutating func lastKnown() throws -> Fix? {
            var stored = resolver.store.load(now: now())
            if let fix = stored, fix.timestamp > now() {
                if !notedLaterFix {
                    resolver.logger.notice("the last known location is dated \(TimeText.iso8601(fix.timestamp)), after the query, so it is not reported")
                    notedLaterFix = true
                }
                stored = nil
            }
            return Fix.fresher(stored, try heldFix())
        }

        mutating func current(timeoutMilliseconds: Int64) throws -> LocationDecision {
            if let held = try heldFix(), now().subtractingClamped(held.timestamp) <= resolver.currentMaxAgeMilliseconds {
                return report(held, origin: .current, missing: .unavailable)
            }
            if unavailable == nil, let source = try open() {
                // On a live source, connecting and ?POLL; already used part of the timeout.
                let spent = source.currentTime == nil ? resolver.elapsed.milliseconds(since: started) : 0
                let waitStarted = now()
                do {
                    let remaining = Int(max(0, timeoutMilliseconds - spent))
                    if case .fix(let fix) = try source.waitForFix(timeoutMilliseconds: remaining) {
                        remember(fix)
                        return report(fix, origin: .current, missing: .unavailable)
                    }
                    if source.currentTime != nil { waitEnded = min(now(), waitStarted.addingClamped(Int64(remaining))) }
                } catch let error as SourceError {
                    note(error)
                }
            }
            let reason: FallbackReason = unavailable == nil ? .timeout : .unavailable
            var fallback = try lastKnown()
            if let known = fallback, let maxAge = resolver.lastKnownMaxAgeMilliseconds,
               now().subtractingClamped(known.timestamp) > maxAge {
                resolver.logger.notice("the last known location is older than lastKnownMaxAge, so it is not reported")
                fallback = nil
            }
            var decision = report(fallback, origin: .lastKnown,
                                  missing: reason == .timeout ? .timeout : .unavailable)
            decision.fallbackReason = reason
            return decision
        }

        func report(_ fix: Fix?, origin: LocationOrigin, missing: LocationErrorCode) -> LocationDecision {
            LocationDecision(fix: fix, origin: fix == nil ? nil : origin, fallbackReason: nil,
                             errorCode: fix == nil ? missing : .none, now: max(now(), fix?.timestamp ?? .min))
        }

        func remember(_ fix: Fix) {
            do { try resolver.store.update(with: fix, now: now()) } catch {
                resolver.logger.warning("\(error)")
            }
        }
    }
}

extension Duration {
    /// Whole milliseconds, rounded down.
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
