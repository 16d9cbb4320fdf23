import ArgumentParser
import Foundation
import GeolocateCore

#if canImport(Glibc)
import Glibc
#endif

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write records as GPX, GeoJSON or CSV for other tools.",
        discussion: """
            Reads the spool (records waiting for an endpoint, and delivered ones kept for \
            spool.keepDelivered, 0 by default), or with --input the records of track --stdout \
            (NDJSON, - for stdin), and writes the points with coordinates in spool order, streaming. \
            GPX 1.1: trk/trkseg/trkpt with ele (metres above the WGS84 ellipsoid), time, name (the \
            record's id), desc (its action), fix. GeoJSON (RFC 7946): a FeatureCollection of Points \
            [lon, lat, alt] with the record's fields as properties. CSV (RFC 4180): a header row, \
            then id, time, latitude, longitude, altitude, accuracy, verticalAccuracy, speed (m/s), \
            course, fixMode, provider, action, triggeredAt, locationSource and the address parts.

            --since and --until take ISO 8601 (2026-11-25T08:00:00Z), epoch milliseconds, or a \
            duration meaning that long ago (24h); they compare the fix's time. With --output, the \
            file appears only when complete: a failed export (exit 73 for a full disk) leaves none.
            """
    )

    @Option(name: .long, help: ArgumentHelp("Output format: gpx, geojson or csv.", valueName: "format"))
    var format: ExportFormat

    @Option(name: .long, help: ArgumentHelp("Only fixes at or after this time (ISO 8601, epoch ms, or 24h for that long ago).", valueName: "time"))
    var since: String?

    @Option(name: .long, help: ArgumentHelp("Only fixes at or before this time.", valueName: "time"))
    var until: String?

    @Option(name: .long, help: ArgumentHelp("Read NDJSON records (track --stdout) from this file instead of the spool; - for stdin.", valueName: "file"))
    var input: String?

    @Option(name: .long, help: ArgumentHelp("Write to this file instead of stdout.", valueName: "file"))
    var output: String?

    func run() throws {
        try runReportingErrors {
            let logger = DiagnosticLog.logger(verbose: false)
            let exporter = try Exporter(format: format, since: since, until: until)
            let source: Exporter.Input
            var opened: Int32?
            switch input {
            case nil:
                source = .spool(try Spool(stateDirectory: Paths.stateDirectory(environment: ProcessInfo.processInfo.environment)))
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
            let summary = try exporter.run(from: source, to: output)
            if summary.withoutCoordinates > 0 {
                logger.notice("\(summary.points) points; \(summary.withoutCoordinates) records without coordinates left out")
            }
        }
    }
}

extension ExportFormat: ExpressibleByArgument {}
