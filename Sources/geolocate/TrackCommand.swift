import ArgumentParser
import Dispatch
import Foundation
import GeolocateCore
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

    /// Parsed in `validate()`; a bare number is seconds, as GeoManager's interval.
    @Option(name: .long, help: ArgumentHelp("Emit when this much time passed since the last record (default 300s; a bare number is seconds).", valueName: "duration"))
    var interval: String?

    @Option(name: .long, help: ArgumentHelp("Emit when the device moved this many metres from the last record (default 300).", valueName: "metres"))
    var distance: Double?

    @Option(name: .long, help: ArgumentHelp("Drop fixes less accurate than this: best (keep all), 10m, 100m, 1km or 3km.", valueName: "level"))
    var accuracy: String = AccuracyLevel.best.rawValue

    @Option(name: .long, help: ArgumentHelp("Collect only inside this local time window (default 00:00-23:59).", valueName: "HH:MM-HH:MM"))
    var window: String?

    @Option(name: .long, help: ArgumentHelp("Stop after this many records.", valueName: "n"))
    var count: Int?

    @Option(name: .long, help: ArgumentHelp("Stop after this much time (log time on a replay; a bare number is seconds).", valueName: "duration"))
    var duration: String?

    @Flag(name: .long, help: "Also print each record as one JSON line on stdout.")
    var stdout = false

    @Flag(name: .customLong("no-spool"), help: "Do not write records to the spool (needs --stdout).")
    var noSpool = false

    @Flag(name: .customLong("every-fix"), help: "Emit a record for every fix that passes the filters.")
    var everyFix = false

    @Option(name: .long, help: ArgumentHelp("Permission for this run: fine, coarse or none (default: config permissions).", valueName: "permission"))
    var permission: TriggerCommand.PermissionFlag?

    @Flag(name: .long, help: "Log debug diagnostics (connections, waits, counts) on stderr.")
    var verbose = false

    /// Parsed in `validate()`; `off` turns it off.
    @Option(name: .customLong("transmit-interval"), help: ArgumentHelp(
        "Run a flush this often while tracking, or off (default: config transmissionInterval, else 6h; only with endpoints configured).",
        valueName: "duration"))
    var transmitInterval: String?

    @OptionGroup var sourceOptions: SourceOptions

    @OptionGroup var globalOptions: GlobalOptions

    func validate() throws {
        if noSpool && !stdout {
            throw ValidationError("--no-spool without --stdout would keep nothing; add --stdout")
        }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if let distance, !(distance.isFinite && distance > 0) { throw ValidationError("--distance must be a number of metres above 0") }
        do {
            _ = try policy(warn: { _ in })
            if let transmitInterval, transmitInterval != "off" {
                _ = try Self.positiveMilliseconds(transmitInterval, flag: "--transmit-interval")
            }
        } catch let error as GeolocateError {
            throw ValidationError(error.description)
        }
    }

    /// The policy the flags ask for; `warn` receives each out-of-range value replaced by its default.
    func policy(warn: (String) -> Void) throws -> TrackPolicy {
        var policy = TrackPolicy()
        if let interval {
            let (value, warning) = TrackPolicy.checkedInterval(try DurationText.milliseconds(interval, bareUnit: .seconds))
            policy.intervalMilliseconds = value
            warning.map(warn)
        }
        if let distance {
            let (value, warning) = TrackPolicy.checkedDistance(distance)
            policy.distanceMetres = value
            warning.map(warn)
        }
        guard let level = AccuracyLevel(rawValue: accuracy) else {
            throw GeolocateError.usage("invalid accuracy '\(accuracy)' (use best, 10m, 100m, 1km or 3km)")
        }
        policy.accuracy = level
        if let window { policy.window = try CollectionWindow(parsing: window) }
        policy.everyFix = everyFix
        policy.count = count
        policy.durationMilliseconds = try duration.map { try Self.positiveMilliseconds($0, flag: "--duration") }
        return policy
    }

    /// A duration flag's milliseconds; 0 is refused, as it would stop at once or flush without pause.
    static func positiveMilliseconds(_ text: String, flag: String) throws -> Int64 {
        let milliseconds = try DurationText.milliseconds(text, bareUnit: .seconds)
        guard milliseconds > 0 else { throw GeolocateError.usage("\(flag) must be above 0 (such as 30s or 10m)") }
        return milliseconds
    }

    func run() throws {
        try runReportingErrors {
            let logger = DiagnosticLog.logger(verbose: verbose)
            let settings = try ConfigStore(path: globalOptions.configPath).settings()
            var policy = try policy(warn: { logger.warning("\($0)") })
            policy.visits = settings.visitSettings
            let stop = StopFlag()
            let signals = SignalHandlers(stopping: stop)
            defer { withExtendedLifetime(signals) {} }
            let environment = ProcessInfo.processInfo.environment
            let tracker = Tracker(settings: settings, environment: environment,
                                  logger: logger, stop: stop,
                                  output: { line in if !FileHandleOutput.stdout(line) { stop.request() } },
                                  transmission: try transmission(settings: settings, environment: environment, logger: logger))
            _ = try tracker.run(TrackRequest(
                policy: policy, source: try sourceOptions.specifier(), replaySpeed: try sourceOptions.speed(),
                permission: permission.map { $0 == .none ? nil : Permission(rawValue: $0.rawValue) },
                toStdout: stdout, toSpool: !noSpool))
        }
    }
}

extension TrackCommand {
    /// The flush track runs on its cadence: `--transmit-interval`, else `transmissionInterval`,
    /// else 6 h; none when it is off, when records are not spooled, or with no endpoint configured.
    func transmission(settings: Settings, environment: [String: String],
                      logger: Logger) throws -> (intervalMilliseconds: Int64, flush: BackgroundFlush)? {
        let interval: Int64?
        if let transmitInterval {
            interval = transmitInterval == "off" ? nil : try Self.positiveMilliseconds(transmitInterval, flag: "--transmit-interval")
        } else {
            interval = settings.transmissionIntervalMilliseconds ?? Defaults.transmissionIntervalMilliseconds
        }
        guard let interval, !noSpool, !settings.endpoints.isEmpty else { return nil }
        let configPath = globalOptions.configPath
        return (interval, BackgroundFlush {
            do {
                let report = try await Delivery.flush(settings: settings, configPath: configPath, environment: environment,
                                                      logger: logger, waitForTurn: false)
                logger.debug("transmission: \(report.endpoints.map { "\($0.name) \($0.sent) sent, \($0.pending) pending" })")
            } catch {
                logger.warning("transmission failed: \(ErrorText.plain(error))")
            }
        })
    }
}

/// SIGINT and SIGTERM request a clean stop instead of ending the process; SIGPIPE is an error
/// return (stdout's reader went away), which also stops the run.
final class SignalHandlers {
    private let sources: [DispatchSourceSignal]

    init(stopping stop: StopFlag) {
        signal(SIGPIPE, SIG_IGN)
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.request() }
            source.resume()
            return source
        }
    }
}
