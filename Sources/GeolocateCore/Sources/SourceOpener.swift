import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import Logging

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
