import ArgumentParser
import Foundation
import GPSD
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Say whether collection and delivery are healthy.",
        discussion: """
            The spool (pending, oldest, dead letters), each endpoint's last success and error, \
            the last fix, gpsd and the geocoder cache. Read-only: it creates and changes \
            nothing in the state directory, and a user who may only read it can run it. \
            --check exits 0 OK, 1 WARNING (oldest pending or last fix older than -w, records \
            expired unsent in the last \(Spool.recentExpiryMilliseconds / 3_600_000) h), 2 CRITICAL (older than -c, dead letters, gpsd \
            down, an endpoint refusing for its URL, credentials or TLS, a damaged spool), \
            3 UNKNOWN (the spool or the config cannot be read). Without --check a damaged or \
            unreadable spool is reported and status exits 65. More: man geolocate.

            Examples:
              geolocate status
              geolocate status --check -w 30m -c 6h   # for Nagios, Icinga or Sensu

            A user with no files of their own reads the system's (--system); one who may not \
            read the spool gets its counts from status.json. --check usage errors: UNKNOWN.
            """
    )

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    @Flag(name: .long, help: "One monitoring-plugins line, exit 0-3.")
    var check = false

    /// `-w/--warning`, as monitoring plugins name it; a duration with a unit.
    @Option(name: [.customShort("w"), .long], parsing: .unconditional, help: ArgumentHelp(
        "--check: WARNING past this age (default \(DurationText.format(StatusReport.warningAgeMs))).", valueName: "age"),
            transform: RefusedValue.checking("-w", "--warning") { try DurationFlag.positive($0, flag: "--warning") })
    var warning: Int64?

    /// `-c/--critical`; must be above `--warning`.
    @Option(name: [.customShort("c"), .long], parsing: .unconditional, help: ArgumentHelp(
        "--check: CRITICAL past this age (default \(DurationText.format(StatusReport.criticalAgeMs))).", valueName: "age"),
            transform: RefusedValue.checking("-c", "--critical") { try DurationFlag.positive($0, flag: "--critical") })
    var critical: Int64?

    @OptionGroup var globalOptions: GlobalOptions

    /// `-w` and `-c`, each else its default.
    var thresholds: StatusReport.Thresholds {
        StatusReport.Thresholds(warningMs: warning ?? StatusReport.warningAgeMs, criticalMs: critical ?? StatusReport.criticalAgeMs)
    }

    func validate() throws {
        if json && check { throw ValidationError("--json and --check cannot be used together") }
        if thresholds.warningMs >= thresholds.criticalMs {
            throw ValidationError("--warning (\(DurationText.format(thresholds.warningMs))) must be below --critical (\(DurationText.format(thresholds.criticalMs)))")
        }
    }

    func run() throws {
        // A monitoring user with no files of their own reads the system's (SPEC §16).
        let options = globalOptions.forReading
        // --check says everything in its one line: monitoring plugins print nothing else.
        var logger = DiagnosticLog.logger(verbose: false)
        if check { logger.logLevel = .critical }
        let output = StatusReport.command(form, context: Result { try options.context(logger: logger) }, stateDirectory: Paths.stateDirectory(environment: options.environment)) { host, port in
            GPSDSource.probe(host: host, port: port, timeoutMilliseconds: Int(Defaults.gpsdResponseTimeoutMilliseconds),
                             logger: logger, clock: options.clock, elapsed: options.elapsed)
        }
        do {
            if let report = output.report { try FileHandleOutput.stdout(report + "\n") }
        } catch let error as GeolocateError {
            // 74, one line; under --check a plugin whose line could not be printed is UNKNOWN.
            throw CommandEnd.reporting(error, as: check ? .checkUnknown : error.exitStatus)
        }
        if let problem = output.problem { StandardError.write("geolocate: \(problem)") }
        if output.exitStatus != .success { throw CommandEnd(output.exitStatus) }
    }

    /// The form the flags ask for.
    var form: StatusForm { check ? .check(thresholds) : json ? .json : .text }
}
