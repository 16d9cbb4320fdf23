import ArgumentParser
import Foundation
import GeolocateCore
import GeolocateDelivery
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write records as GPX, GeoJSON or CSV for other tools.",
        discussion: """
            Reads the spool (read-only: nothing in the state directory is created or changed), \
            or with --input the NDJSON of track --stdout, and writes the points under privacy.* \
            and fields.*, as flush sends them. GPX has events as waypoints, then the track, \
            each by time. --since and --until take \
            ISO 8601, epoch milliseconds, or an age with a unit (24h). With --output, the file \
            appears only when complete, never in the state directory. More: man geolocate.

            Examples:
              geolocate export --format gpx --since 24h --output today.gpx
              geolocate export --format geojson --input track.ndjson
            """
    )

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Output format.", valueName: "format"))
    var format: ExportFormat

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Fixes from this time: ISO 8601, epoch ms, or 24h ago.", valueName: "time"),
            transform: RefusedValue.checking("--since", parse: ExportCommand.checkedTime))
    var since: String?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Fixes up to this time (the same forms).", valueName: "time"),
            transform: RefusedValue.checking("--until", parse: ExportCommand.checkedTime))
    var until: String?

    /// A window bound as typed, checked for its form where the flag is read (an age is taken
    /// back from the time the export runs, later).
    @Sendable static func checkedTime(_ text: String) throws -> String {
        _ = try Exporter.time(text, now: 0)
        return text
    }

    @Option(name: .long, help: ArgumentHelp("Read NDJSON records from this file (- for stdin).", valueName: "file"), completion: .file(extensions: ["ndjson", "json"]))
    var input: String?

    @Option(name: .long, help: ArgumentHelp("Write to this file instead of stdout.", valueName: "file"), completion: .file())
    var output: String?

    @OptionGroup var globalOptions: GlobalOptions

    func validate() throws {
        if output == "" { throw ValidationError("--output needs a file name (leave it out to write to stdout)") }
        if input == "" { throw ValidationError("--input needs a file name, or - for stdin") }
    }

    func run() throws {
        try runReportingErrors {
            // A user with no files of their own reads the system's; its spool needs root or geolocate.
            let context = try globalOptions.forReading.context()
            let request = ExportRequest(format: format, since: since, until: until, input: input, output: output)
            // SIGINT and SIGTERM while --output is written: the temporary file is removed and the
            // process exits as a shell reports the signal (130, 143), leaving the output as it was.
            try Exporter.command(context, request) { temporary in
                SignalHandlers { number in
                    temporary.abandon()
                    _exit(128 + number)
                }
            }
        }
    }
}

extension ExportFormat: ExpressibleByArgument {
    package init?(argument: String) {
        guard let format = RefusedValue.choice(argument, ExportFormat.init(rawValue:)) else { return nil }
        self = format
    }
}
