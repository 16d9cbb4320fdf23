import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging

/// The outcome of waiting for a fresh fix.
package enum SourceWait: Sendable, Equatable {
    /// A fix arrived within the time allowed.
    case fix(Fix)
    /// No fix arrived within the time allowed (or the replay ended first).
    case timedOut
}

/// Where fixes come from: gpsd or an NMEA replay.
///
/// Time inside a source is the source's own: the system clock for live sources, the NMEA
/// timestamps (virtual time) for a replay, so timeouts on a replay are exact and instant.
package protocol LocationSource: AnyObject {
    /// The `provider` name records carry.
    var provider: Fix.Provider { get }
    /// A one-line description for messages, such as `gpsd://localhost:2947` or `nmea:drive.nmea`.
    var name: String { get }
    /// The source's current time in milliseconds since 1970, when it has its own (replay);
    /// `nil` means the system clock.
    var currentTime: Int64? { get }
    /// The source's time when a query starts, reading ahead as needed: a replay's first
    /// epoch; `nil` means the system clock (a live source, or a log with no date).
    func startTime() throws -> Int64?
    /// The fix the source already holds, without waiting for a new one (gpsd's `?POLL;`).
    /// - Throws: `SourceError` when the source cannot be reached.
    func heldFix() throws -> Fix?
    /// Waits up to `timeoutMilliseconds` of source time for the next fix.
    /// - Throws: `SourceError` when the source cannot be reached or fails while waiting.
    func waitForFix(timeoutMilliseconds: Int) throws -> SourceWait
    /// Whether the last `waitForFix` returned early, before its time was up: input that
    /// stayed silent for the idle limit, or pacing that holds the next epoch back.
    var lastWaitWasIdle: Bool { get }
    /// Whether the source has nothing more to give (a replay at the end of its log); a live
    /// source never ends.
    var hasEnded: Bool { get }
    /// Ends the epoch the source is assembling and returns its fix, if it makes one: what
    /// track takes when a stop comes while the input is idle, since that epoch would close
    /// only when the next sentence arrives.
    func finishPending() -> Fix?
    /// What the source read so far, for `--verbose`: sentences taken and lines rejected by
    /// kind; `nil` when it has nothing to say.
    var readSummary: String? { get }
}

extension LocationSource {
    package func startTime() throws -> Int64? { nil }
    package var hasEnded: Bool { false }
    package var lastWaitWasIdle: Bool { false }
    package func finishPending() -> Fix? { nil }
    package var readSummary: String? { nil }
}

/// Why a source could not deliver.
package enum SourceError: Error, Equatable, CustomStringConvertible {
    /// The source could not be reached or failed; the text names it and says how.
    case unavailable(String)

    package var description: String {
        switch self {
        case .unavailable(let message): return message
        }
    }
}

/// What opening a source needs besides its specifier.
package struct SourceOpening: Sendable {
    /// Pacing of a replay.
    package var replaySpeed: ReplaySpeed
    /// The longest gpsd may take to accept the connection, and to answer `?POLL;`.
    package var responseTimeoutMilliseconds: Int
    /// How long a replay wait may block on silent input or pacing before it returns (track
    /// sets it, to commit and see a stop meanwhile); `nil` waits as long as needed.
    package var idleMilliseconds: Int32?
    /// The longest a replay may read ahead for its date on silent input (trigger on a pipe,
    /// FIFO or tty, where the query timeout bounds wall time); `nil` reads as long as needed.
    package var readAheadMilliseconds: Int64?
    /// The system clock a live source dates arrivals on; `--now` fixes it for a trigger.
    package var clock: WallClock
    /// What a replay's pacing and gpsd's deadlines are measured on.
    package var elapsed: MonotonicClock
    package var logger: Logger

    package init(replaySpeed: ReplaySpeed = .asap,
                 responseTimeoutMilliseconds: Int = Int(Defaults.gpsdResponseTimeoutMilliseconds),
                 idleMilliseconds: Int32? = nil, readAheadMilliseconds: Int64? = nil,
                 clock: WallClock, elapsed: MonotonicClock, logger: Logger) {
        self.clock = clock
        self.elapsed = elapsed
        self.replaySpeed = replaySpeed
        self.responseTimeoutMilliseconds = responseTimeoutMilliseconds
        self.idleMilliseconds = idleMilliseconds
        self.readAheadMilliseconds = readAheadMilliseconds
        self.logger = logger
    }
}

extension SourceSpecifier {
    /// Whether the source is a replay on its log's clock: NMEA from a file, pipe or FIFO, not
    /// a receiver on a terminal, whose fixes are live (SPEC §3).
    package var isReplay: Bool {
        if case .nmea(let path) = self { return !NMEAReplaySource.isTerminal(path) }
        return false
    }
}

/// Opens the source a specifier names: a replay here, gpsd through the adapter the program
/// links (the `GPSD` target's `SourceOpener.withGPSD`), so the core never touches libgps.
package struct SourceOpener: Sendable {
    let gpsd: @Sendable (_ host: String, _ port: Int, _ opening: SourceOpening) throws -> LocationSource
    /// The login gate's rule for NMEA input (`trustingOnlyRootsNMEA`).
    private(set) var requiresRootsNMEA = false

    package init(gpsd: @escaping @Sendable (_ host: String, _ port: Int, _ opening: SourceOpening) throws -> LocationSource) {
        self.gpsd = gpsd
    }

    /// This opener, refusing NMEA input another user controls (SPEC §14): the login gate's.
    package func trustingOnlyRootsNMEA() -> SourceOpener {
        var opener = self
        opener.requiresRootsNMEA = true
        return opener
    }

    /// Replays only: gpsd is unavailable, as in a program built without the adapter.
    package static let replaysOnly = SourceOpener { host, port, _ in
        throw SourceError.unavailable("gpsd://\(host):\(port): this program was built without the gpsd adapter")
    }

    /// Opens the source: connects to gpsd, or opens the replay file.
    /// - Throws: `SourceError.unavailable` when gpsd cannot be reached; `GeolocateError` when a
    ///   replay file is missing (66) or unreadable (65).
    package func open(_ specifier: SourceSpecifier, _ opening: SourceOpening) throws -> LocationSource {
        switch specifier {
        case .nmea(let path):
            let source = try NMEAReplaySource(path: path, speed: opening.replaySpeed, idleMilliseconds: opening.idleMilliseconds,
                                              readAheadMilliseconds: opening.readAheadMilliseconds, pacingClock: opening.elapsed,
                                              arrivalClock: opening.clock, logger: opening.logger)
            if requiresRootsNMEA, let problem = source.gateProblem() {
                throw GeolocateError.sourceUnavailable("\(specifier): \(problem); the login gate does not trust its fixes")
            }
            return source
        case .gpsd(let host, let port):
            return try gpsd(host, port, opening)
        }
    }
}
