import ArgumentParser
import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool

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

    @Option(name: .long, help: ArgumentHelp("Output format.", valueName: "format"))
    var format: ExportFormat

    @Option(name: .long, help: ArgumentHelp("Fixes from this time: ISO 8601, epoch ms, or 24h ago.", valueName: "time"))
    var since: String?

    @Option(name: .long, help: ArgumentHelp("Fixes up to this time (the same forms).", valueName: "time"))
    var until: String?

    @Option(name: .long, help: ArgumentHelp("Read NDJSON records from this file (- for stdin).", valueName: "file"), completion: .file(extensions: ["ndjson", "json"]))
    var input: String?

    @Option(name: .long, help: ArgumentHelp("Write to this file instead of stdout.", valueName: "file"), completion: .file())
    var output: String?

    @OptionGroup var globalOptions: GlobalOptions

    func run() throws {
        try runReportingErrors {
            let logger = DiagnosticLog.logger(verbose: false)
            // A user with no files of their own reads the system's; its spool needs root or geolocate.
            let globalOptions = self.globalOptions.forReading
            let settings = try globalOptions.configStore.settings()
            let exporter = try Exporter(format: format, policy: OutputPolicy(settings: settings), since: since, until: until,
                                        clock: globalOptions.clock)
            let stateDirectory = Paths.stateDirectory(environment: globalOptions.environment)
            let protected = [(path: globalOptions.configPath, what: "the configuration file")]
                + (input.flatMap { $0 == "-" ? nil : [(path: $0, what: "the --input file")] } ?? [])
            if let output, output != "-" { _ = try Exporter.refuseOutput(output, stateDirectory: stateDirectory, protected: protected) }
            let source: Exporter.Input
            var opened: Int32?
            switch input {
            case nil:
                source = try Exporter.spoolInput(stateDirectory: stateDirectory, elapsed: globalOptions.elapsed)
            case "-"?:
                source = .ndjson(fd: 0, name: "standard input")
            case let path?:
                let fd = open(path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else {
                    throw errno == ENOENT ? GeolocateError.inputMissing(path: path)
                        : GeolocateError.unreadableInput(reason: "\(path): \(ErrorText.posix(errno))")
                }
                opened = fd
                source = .ndjson(fd: fd, name: path)
            }
            defer { if let opened { close(opened) } }
            let temporary = PendingFile()
            // SIGINT and SIGTERM while --output is written: the temporary file is removed and the
            // process exits as a shell reports the signal (130, 143), leaving the output as it was.
            let signals = output != nil && output != "-" ? SignalHandlers { number in
                temporary.abandon()
                _exit(128 + number)
            } : nil
            let summary = try exporter.run(from: source, to: output, stateDirectory: stateDirectory, temporary: temporary,
                                           protected: protected)
            withExtendedLifetime(signals) {}
            // Which state directory was read, as status says it: a user without one of their
            // own reads the system's (SPEC §16).
            if input == nil { logger.notice("exported the spool of \(stateDirectory)") }
            if summary.withoutFix > 0 {
                logger.notice("\(summary.withoutFix) records without a location left out")
            }
            if summary.coordinatesWithheld > 0 {
                logger.notice(format.keepsRecordsWithoutCoordinates
                    ? "\(summary.coordinatesWithheld) rows without coordinates: privacy.precision or privacy.locationAttributeFilter withholds them"
                    : "\(summary.coordinatesWithheld) records left out: privacy.precision or privacy.locationAttributeFilter withholds their coordinates, which \(format.rawValue) needs (csv keeps them as rows)")
            }
        }
    }
}

extension ExportFormat: ExpressibleByArgument {}
