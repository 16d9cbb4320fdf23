import ArgumentParser
import Dispatch
import Foundation
import GPSD
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging
import Mosquitto

#if canImport(Glibc)
import Glibc
#endif

struct TrackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "track",
        abstract: "Collect locations continuously into the spool and/or NDJSON on stdout.",
        discussion: """
            A record for the first fix, then whenever --interval passed or the device moved \
            --distance; committed within 200 ms, and SIGINT or SIGTERM commits what is \
            pending and exits 0. Durations need a unit (30s, 5m). More: man geolocate.

            Examples:
              geolocate track --interval 2m --distance 250
              geolocate track --replay drive.nmea --stdout --no-spool
            """
    )

    @Option(name: .long, help: ArgumentHelp(
        "Emit after this long, with a unit: \(TrackPolicy.intervalRangeText) (\(DurationText.format(TrackPolicy.defaultIntervalMilliseconds))).",
        valueName: "duration"),
            transform: { try DurationText.milliseconds($0, bareUnit: .refused) })
    var interval: Int64?

    @Option(name: .long, help: ArgumentHelp(
        "Emit after moving this far: \(TrackPolicy.distanceRangeText) (\(Int(TrackPolicy.defaultDistanceMetres))).", valueName: "metres"))
    var distance: Double?

    @Option(name: .long, help: ArgumentHelp("Drop fixes less accurate than this.", valueName: "level"))
    var accuracy: AccuracyLevel = .best

    @Option(name: .long, help: ArgumentHelp("Collect only in this local time window.", valueName: "HH:MM-HH:MM"),
            transform: CollectionWindow.init(parsing:))
    var window: CollectionWindow?

    @Option(name: .long, help: ArgumentHelp("Stop after this many records.", valueName: "n"))
    var count: Int?

    @Option(name: .long, help: ArgumentHelp("Stop after this long, with a unit: 10m, 2h.", valueName: "duration"),
            transform: { try DurationFlag.positive($0, flag: "--duration") })
    var duration: Int64?

    @Flag(name: .long, help: "Also print each record as a JSON line.")
    var stdout = false

    @Option(name: .long, help: ArgumentHelp("--stdout format.", valueName: "format"))
    var format: RecordFormat = .mosaic

    @Flag(name: .customLong("no-spool"), help: "Do not write records to the spool (needs --stdout).")
    var noSpool = false

    @Flag(name: .customLong("every-fix"), help: "Emit a record for every fix.")
    var everyFix = false

    @Option(name: .long, help: ArgumentHelp("Granted (else config).", valueName: "permission"))
    var permission: PermissionChoice?

    @Flag(name: .long, help: "Log diagnostics on stderr (counts, lines rejected).")
    var verbose = false

    @Option(name: .customLong("transmit-interval"), help: ArgumentHelp(
        "Flush this often, with a unit: 30m, 6h; or off.", valueName: "duration"), transform: TransmitInterval.init(parsing:))
    var transmitInterval: TransmitInterval?

    @OptionGroup var sourceOptions: SourceOptions

    @OptionGroup var globalOptions: GlobalOptions

    func validate() throws {
        if noSpool && !stdout {
            throw ValidationError("--no-spool without --stdout would keep nothing; add --stdout")
        }
        if format != .mosaic && !stdout { throw ValidationError("--format sets how --stdout prints records; add --stdout") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if let distance, !(distance.isFinite && distance > 0) { throw ValidationError("--distance must be a number of metres above 0") }
    }

    /// The policy the flags ask for; `warn` receives each out-of-range value replaced by its default.
    func policy(warn: (String) -> Void) -> TrackPolicy {
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

    func run() async throws {
        try await runReportingErrors {
            let logger = DiagnosticLog.logger(verbose: verbose)
            let settings = try globalOptions.configStore.settings()
            var policy = policy(warn: { logger.warning("\($0)") })
            policy.visits = settings.visitSettings
            let stop = StopFlag()
            let signals = SignalHandlers { _ in stop.request() }
            defer { withExtendedLifetime(signals) {} }
            let environment = globalOptions.environment
            var outputFailure: Int32?
            let tracker = Tracker(settings: settings, environment: environment,
                                  clock: globalOptions.clock, elapsed: globalOptions.elapsed, logger: logger, stop: stop,
                                  output: { line in
                                      guard let code = FileHandleOutput.write(1, line, giveUp: { stop.isRequested }) else { return }
                                      outputFailure = outputFailure ?? code
                                      stop.request()
                                  },
                                  openSource: SourceOpener.withGPSD.trustingOnlySystemListeners().open,
                                  transmission: transmission(settings: settings, environment: environment, logger: logger))
            var request = TrackRequest(
                policy: policy, source: sourceOptions.specifier, replaySpeed: sourceOptions.replaySpeed,
                permission: permission?.granted,
                toStdout: stdout, toSpool: !noSpool)
            request.format = format
            if format.namesTheDevice { request.sender = try Sender(settings: settings, stateDirectory: Paths.stateDirectory(environment: environment)) }
            // The loop blocks on the source and waits for the geocoder: a thread of its own,
            // never one of the cooperative pool's, which the flushes beside it need.
            let track = tracker
            _ = try await SourceThread.run { try track.run(request) }
            // A reader that went away (`track --stdout | head`) stops track as a signal does, as
            // does a stop while stdout's reader is not reading; any other failure (a full disk)
            // lost records, which must not look like success.
            if let code = outputFailure, code != EPIPE, code != ECANCELED {
                throw GeolocateError.outputFailed(reason: ErrorText.posix(code))
            }
        }
    }
}

extension TrackCommand {
    /// The flush track runs on its cadence: `--transmit-interval`, else `transmissionInterval`,
    /// else 6 h; none when it is off, when records are not spooled, or with no endpoint configured.
    func transmission(settings: Settings, environment: [String: String],
                      logger: Logger) -> (intervalMilliseconds: Int64, flush: BackgroundFlush)? {
        let interval: Int64?
        switch transmitInterval {
        case .off?: interval = nil
        case .every(let milliseconds)?: interval = milliseconds
        case nil: interval = settings[ConfigKey.transmissionInterval]
        }
        guard let interval, !noSpool, !settings.endpoints.isEmpty else { return nil }
        let configPath = globalOptions.configPath
        let clock = globalOptions.clock
        let elapsed = globalOptions.elapsed
        return (interval, BackgroundFlush {
            do {
                let report = try await Delivery.flush(settings: settings, configPath: configPath, environment: environment,
                                                      logger: logger, waitForTurn: false, mqtt: MosquittoTransport(elapsed: elapsed),
                                                      clock: clock, elapsed: elapsed)
                logger.debug("transmission: \(report.endpoints.map { "\($0.name) \($0.sent) sent, \($0.pending) pending" })")
            } catch {
                logger.warning("transmission failed: \(ErrorText.plain(error))")
            }
        })
    }
}

/// SIGINT, SIGTERM and SIGHUP (a closed terminal or ssh session) handled by `handler` (given
/// the signal's number) instead of ending the process: track stops cleanly, export removes
/// its temporary file. SIGPIPE is ignored by every command: a reader that went away also
/// stops the run.
final class SignalHandlers {
    private let sources: [DispatchSourceSignal]

    init(_ handler: @escaping @Sendable (Int32) -> Void) {
        sources = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }
}
