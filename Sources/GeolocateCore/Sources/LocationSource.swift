import GeolocateDelivery
import GeolocateModel

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
