import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `track --transmit-interval`: a flush this often, or none.
package enum TransmitInterval: Sendable, Equatable {
    case off
    case every(milliseconds: Int64)
}

/// The filters and limits `track`'s flags ask for, before they are checked.
package struct TrackFlags: Sendable {
    package var interval: Int64?
    package var distance: Double?
    package var accuracy: AccuracyLevel = .best
    package var window: CollectionWindow?
    package var count: Int?
    package var duration: Int64?
    package var everyFix = false
    package var transmitInterval: TransmitInterval?

    package init() {}

    /// The policy the flags ask for; `warn` receives each out-of-range value replaced by its
    /// default (as the GeoManager seed does, SPEC §4).
    package func policy(warn: (String) -> Void) -> TrackPolicy {
        var policy = TrackPolicy()
        if let interval {
            let (value, warning) = TrackPolicy.checkedInterval(interval)
            policy.intervalMilliseconds = value
            warning.map(warn)
        }
        if let distance {
            let (value, warning) = TrackPolicy.checkedDistance(distance)
            policy.distanceMetres = value
            warning.map(warn)
        }
        policy.accuracy = accuracy
        if let window { policy.window = window }
        policy.everyFix = everyFix
        policy.count = count
        policy.durationMilliseconds = duration
        return policy
    }
}

extension Tracker {
    /// `track` whole: the flags' policy (settings' visits added), records to the spool and to
    /// `write` (`--stdout`), a flush on the transmission cadence beside it, until the source
    /// ends, a limit or `stop`.
    ///
    /// `write` returns the `errno` of a line it could not write, which stops the run: a reader
    /// that went away (`EPIPE`) or a stop while it was not reading (`ECANCELED`) end it as a
    /// stop does; any other (a full disk) lost records and is the command's error.
    /// - Throws: `GeolocateError.outputFailed` (74) after the run for such a write; every error of `run`.
    package static func command(_ context: CommandContext, flags: TrackFlags, request: TrackRequest, stop: StopFlag,
                                openSource: @escaping (SourceSpecifier, SourceOpening) throws -> LocationSource,
                                mqtt: @escaping @Sendable () -> MQTTTransport?,
                                write: @escaping ([UInt8]) -> Int32?) async throws {
        let logger = context.logger
        var request = request
        request.policy = flags.policy(warn: { logger.warning("\($0)") })
        request.policy.visits = context.settings.visitSettings
        if request.format.namesTheDevice { request.sender = try Sender(settings: context.settings, stateDirectory: context.stateDirectory) }
        let outputFailure = Mutex<Int32?>(nil)
        let tracker = Tracker(context, stop: stop,
                              output: { line in
                                  guard let code = write(line) else { return }
                                  outputFailure.withLock { $0 = $0 ?? code }
                                  stop.request()
                              },
                              openSource: openSource,
                              transmission: transmission(context, flags.transmitInterval, spooling: request.toSpool, mqtt: mqtt))
        // The loop blocks on the source and waits for the geocoder: a thread of its own,
        // never one of the cooperative pool's, which the flushes beside it need.
        let run = request
        _ = try await SourceThread.run { try tracker.run(run) }
        if let code = outputFailure.withLock({ $0 }), code != EPIPE, code != ECANCELED {
            throw GeolocateError.outputFailed(reason: ErrorText.posix(code))
        }
    }

    /// The flush track runs on its cadence: `--transmit-interval`, else `transmissionInterval`,
    /// else 6 h; none when it is off, when records are not spooled, or with no endpoint configured.
    static func transmission(_ context: CommandContext, _ flag: TransmitInterval?, spooling: Bool,
                             mqtt: @escaping @Sendable () -> MQTTTransport?) -> (intervalMilliseconds: Int64, flush: BackgroundFlush)? {
        let (settings, logger) = (context.settings, context.logger)
        let interval: Int64?
        switch flag {
        case .off?: interval = nil
        case .every(let milliseconds)?: interval = milliseconds
        case nil: interval = settings[ConfigKey.transmissionInterval]
        }
        guard let interval, spooling, !settings.endpoints.isEmpty else { return nil }
        return (interval, BackgroundFlush {
            do {
                let report = try await Delivery.flush(context, waitForTurn: false, role: .track, mqtt: mqtt())
                logger.debug("transmission: \(report.endpoints.map { "\($0.name) \($0.sent) sent, \($0.pending) pending" })")
            } catch {
                logger.warning("transmission failed: \(ErrorText.plain(error))")
            }
        })
    }
}
