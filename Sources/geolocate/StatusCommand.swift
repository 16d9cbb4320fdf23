import ArgumentParser
import Foundation
import GeolocateCore
import GPSD

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Say whether collection and delivery are healthy.",
        discussion: """
            The spool (pending, oldest, dead letters), each endpoint's last success and error, \
            the last fix, gpsd and the geocoder cache. --check exits 0 OK, 1 WARNING (oldest \
            pending or last fix over 1 h, records expired unsent in the last 24 h), 2 CRITICAL \
            (over 24 h, dead letters, gpsd down), 3 UNKNOWN. More: man geolocate.

            Examples:
              geolocate status
              geolocate status --check   # for Nagios, Icinga or Sensu
            """
    )

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    @Flag(name: .long, help: "One monitoring-plugins line, exit 0-3.")
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
                settings: try store.settings(), configPath: store.path, environment: globalOptions.environment,
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
