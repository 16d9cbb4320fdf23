import ArgumentParser
import Dispatch
import Foundation
import GeolocateCore
import Mosquitto
import GPSD
import Logging

#if canImport(Glibc)
import Glibc
#endif

struct TrackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "track",
        abstract: "Collect locations continuously into the spool and/or NDJSON on stdout.",
        discussion: """
            A record is emitted for the first fix, then when --interval has passed since the \
            last record or the device moved --distance from it (GeoManager: 60s-1800s and \
            200-500 m; a value outside falls back to the default with a warning), or for every \
            fix with --every-fix. Fixes worse than --accuracy or outside --window (local time, \
            may cross midnight) are not collected. Each record has a context: regular, or \
            visit_entry / visit_exit when the device stays within visits.radius (200 m) for \
            visits.minDuration (10 minutes). On a replay everything runs on the log's time.

            Records are committed to the spool in the state directory (spool.sqlite, SQLite \
            in WAL mode) within 200 ms of being made, whatever the source does; SIGINT or \
            SIGTERM commits what is pending and exits 0 within a second. While another \
            process holds the spool locked, records wait in memory; stopped then, track \
            exits 73 saying how many it could not commit. When gpsd goes away, track keeps running, says so once, \
            reconnects with backoff and resumes. Without a location permission track exits 78.
            """
    )

    @Option(name: .long, help: ArgumentHelp("Emit when this much time passed since the last record, such as 5m (default 300s).", valueName: "duration"),
            transform: { try DurationText.milliseconds($0, bareUnit: .refused) })
    var interval: Int64?

    @Option(name: .long, help: ArgumentHelp("Emit when the device moved this many metres from the last record (default 300).", valueName: "metres"))
    var distance: Double?

    @Option(name: .long, help: ArgumentHelp("Drop fixes less accurate than this: best (keep all), 10m, 100m, 1km or 3km.", valueName: "level"))
    var accuracy: AccuracyLevel = .best

    @Option(name: .long, help: ArgumentHelp("Collect only inside this local time window (default 00:00-23:59).", valueName: "HH:MM-HH:MM"),
            transform: CollectionWindow.init(parsing:))
    var window: CollectionWindow?

    @Option(name: .long, help: ArgumentHelp("Stop after this many records.", valueName: "n"))
    var count: Int?

    @Option(name: .long, help: ArgumentHelp("Stop after this much time, such as 10m (log time on a replay).", valueName: "duration"),
            transform: { try DurationFlag.positive($0, flag: "--duration") })
    var duration: Int64?

    @Flag(name: .long, help: "Also print each record as one JSON line on stdout.")
    var stdout = false

    @Flag(name: .customLong("no-spool"), help: "Do not write records to the spool (needs --stdout).")
    var noSpool = false

    @Flag(name: .customLong("every-fix"), help: "Emit a record for every fix that passes the filters.")
    var everyFix = false

    @Option(name: .long, help: ArgumentHelp("Permission for this run: fine, coarse or none (default: config permissions).", valueName: "permission"))
    var permission: PermissionChoice?

    @Flag(name: .long, help: "Log debug diagnostics (connections, waits, counts) on stderr.")
    var verbose = false

    @Option(name: .customLong("transmit-interval"), help: ArgumentHelp(
        "Run a flush this often while tracking, such as 30m, or off (default: config transmissionInterval, else 6h; only with endpoints configured).",
        valueName: "duration"), transform: TransmitInterval.init(parsing:))
    var transmitInterval: TransmitInterval?

    @OptionGroup var sourceOptions: SourceOptions

    @OptionGroup var globalOptions: GlobalOptions

    func validate() throws {
        if noSpool && !stdout {
            throw ValidationError("--no-spool without --stdout would keep nothing; add --stdout")
        }
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

    func run() throws {
        try runReportingErrors {
            let logger = DiagnosticLog.logger(verbose: verbose)
            let settings = try ConfigStore(path: globalOptions.configPath).settings()
            var policy = policy(warn: { logger.warning("\($0)") })
            policy.visits = settings.visitSettings
            let stop = StopFlag()
            let signals = SignalHandlers(stopping: stop)
            defer { withExtendedLifetime(signals) {} }
            let environment = ProcessInfo.processInfo.environment
            var outputFailure: Int32?
            let tracker = Tracker(settings: settings, environment: environment,
                                  logger: logger, stop: stop,
                                  output: { line in
                                      guard let code = FileHandleOutput.write(1, line, giveUp: { stop.isRequested }) else { return }
                                      outputFailure = outputFailure ?? code
                                      stop.request()
                                  },
                                  openSource: SourceOpener.withGPSD.open,
                                  transmission: transmission(settings: settings, environment: environment, logger: logger))
            _ = try tracker.run(TrackRequest(
                policy: policy, source: sourceOptions.specifier, replaySpeed: sourceOptions.replaySpeed,
                permission: permission?.granted,
                toStdout: stdout, toSpool: !noSpool))
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
        return (interval, BackgroundFlush {
            do {
                let report = try await Delivery.flush(settings: settings, configPath: configPath, environment: environment,
                                                      logger: logger, waitForTurn: false, mqtt: MosquittoTransport())
                logger.debug("transmission: \(report.endpoints.map { "\($0.name) \($0.sent) sent, \($0.pending) pending" })")
            } catch {
                logger.warning("transmission failed: \(ErrorText.plain(error))")
            }
        })
    }
}

/// SIGINT and SIGTERM request a clean stop instead of ending the process (SIGPIPE is ignored
/// by every command: a reader that went away also stops the run).
final class SignalHandlers {
    private let sources: [DispatchSourceSignal]

    init(stopping stop: StopFlag) {
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.request() }
            source.resume()
            return source
        }
    }
}
