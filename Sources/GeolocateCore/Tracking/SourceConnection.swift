import Foundation
import GeolocateDelivery
import GeolocateModel
import Logging

/// A live source kept open across outages: reconnects with exponential backoff and jitter,
/// and says so once per outage (and once when it is back).
///
/// A source that drops again soon after coming back (a flapping gpsd or link) keeps its
/// growing backoff and is reported once as flapping, not once per cycle: only a source that
/// stays up for `stableAfter` starts again from the shortest backoff.
struct SourceConnection {
    let name: String
    /// Times outages and backoff, and waits between attempts.
    let clock: MonotonicClock
    let logger: Logger
    let open: () throws -> LocationSource
    private var current: LocationSource?
    /// Readings of `clock`.
    private var outageStarted: Double?
    private var retryAt: Double?
    private var backoff: Duration = SourceConnection.minimumBackoff
    /// When the source last came back, until it has stayed up for `stableAfter`.
    private var recoveredAt: Double?
    /// Flapping: outages and recoveries are not reported until the source is stable again.
    private var quiet = false
    static let minimumBackoff: Duration = .milliseconds(500)
    static let maximumBackoff: Duration = .seconds(30)
    static let stableAfter: Duration = .seconds(60)

    init(name: String, clock: MonotonicClock, logger: Logger, open: @escaping () throws -> LocationSource) {
        self.name = name
        self.clock = clock
        self.logger = logger
        self.open = open
    }

    /// The open source, or `nil` after waiting a little while it is down.
    /// - Throws: what opening throws other than `SourceError` (a missing replay file).
    mutating func source() throws -> LocationSource? {
        if let current { return current }
        if let retryAt, clock.nowSeconds < retryAt {
            // Short sleeps: the tracking loop checks for a stop and commits between them.
            clock.sleep(seconds: min(0.1, retryAt - clock.nowSeconds))
            return nil
        }
        do {
            current = try open()
        } catch let error as SourceError {
            failed(error)
            return nil
        }
        retryAt = nil
        return current
    }

    /// The source answered a wait without failing: an outage is over only then, since a
    /// server that accepts and closes at once must not look like a recovery each time.
    mutating func answered() {
        if let outageStarted {
            let seconds = clock.milliseconds(since: outageStarted) / 1000
            if !quiet { logger.notice("\(name): reconnected after \(seconds) s; tracking resumes") }
            self.outageStarted = nil
            recoveredAt = clock.nowSeconds
        } else if let recoveredAt, clock.milliseconds(since: recoveredAt) >= SourceConnection.stableAfter.milliseconds {
            if quiet { logger.notice("\(name): answering steadily again; tracking resumes") }
            self.recoveredAt = nil
            quiet = false
            backoff = SourceConnection.minimumBackoff
        }
    }

    /// The source failed while in use.
    mutating func lost(_ error: SourceError) {
        current = nil
        failed(error)
    }

    private mutating func failed(_ error: SourceError) {
        if outageStarted == nil {
            outageStarted = clock.nowSeconds
            if recoveredAt == nil {
                logger.warning("\(error.description); retrying with backoff until it answers")
            } else if !quiet {
                logger.warning("\(error.description); it keeps dropping, so retrying with growing backoff, quietly until it stays up for \(SourceConnection.stableAfter.components.seconds) s")
                quiet = true
            }
        }
        let jitter = Double.random(in: 0.8...1.2)
        retryAt = clock.nowSeconds + Double(backoff.milliseconds) / 1000 * jitter
        backoff = min(backoff * 2, SourceConnection.maximumBackoff)
    }
}
