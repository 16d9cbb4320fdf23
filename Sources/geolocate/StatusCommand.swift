import ArgumentParser
import Foundation
import GeolocateCore
import GPSD

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Say whether collection and delivery are healthy.",
        discussion: """
            Shows the state directory and configuration file; the spool: records pending (and \
            per endpoint), the oldest one's age, dead letters, records expired, delivered records \
            kept; per endpoint its last success, last error and next retry; the last fix (age and \
            source); gpsd, when it is the source: reachable (connects and answers ?POLL; within \
            1 s), its device and fix mode; and the geocoder cache.

            --check prints one line in the monitoring-plugins form (Nagios, Icinga, Sensu): \
            GEOLOCATE OK|WARNING|CRITICAL - summary | perfdata, and exits 0 OK, 1 WARNING (the \
            oldest pending record, or with gpsd the last fix, older than 1 h, or no fix yet), \
            2 CRITICAL (older than 24 h, dead letters, gpsd unreachable), 3 UNKNOWN (the state \
            or the configuration cannot be read).
            """
    )

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    @Flag(name: .long, help: "One monitoring-plugins line; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.")
    var check = false

    @OptionGroup var globalOptions: GlobalOptions

    func validate() throws {
        if json && check { throw ValidationError("--json and --check cannot be used together") }
    }

    func run() throws {
        let report: StatusReport
        do {
            let store = ConfigStore(path: globalOptions.configPath)
            report = try StatusReport.gather(
                settings: try store.settings(), configPath: store.path, environment: ProcessInfo.processInfo.environment,
                logger: DiagnosticLog.logger(verbose: false)
            ) { host, port in
                GPSDSource.probe(host: host, port: port, timeoutMilliseconds: 1000, logger: DiagnosticLog.logger(verbose: false))
            }
        } catch let error as GeolocateError {
            guard check else {
                StandardError.write("geolocate: \(error.description)")
                throw ExitCode(error.exitCode)
            }
            try FileHandleOutput.stdout("GEOLOCATE UNKNOWN - \(StandardError.oneLine(error.description))\n")
            throw ExitCode(3)
        }
        if check {
            let verdict = report.check
            try FileHandleOutput.stdout(verdict.line + "\n")
            if verdict.status != 0 { throw ExitCode(verdict.status) }
        } else {
            try FileHandleOutput.stdout((json ? report.json : report.text) + "\n")
        }
    }
}
