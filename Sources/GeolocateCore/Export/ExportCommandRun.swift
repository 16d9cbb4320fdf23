import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

/// What `export` asks for: the format, the window, where records come from and go.
package struct ExportRequest: Sendable {
    package var format: ExportFormat
    /// `--since`, `--until` as typed: ISO 8601, epoch milliseconds or an age (`24h`).
    package var since: String?
    package var until: String?
    /// `--input FILE` (`-` for stdin): NDJSON records instead of the spool.
    package var input: String?
    /// `--output FILE`: else stdout.
    package var output: String?

    package init(format: ExportFormat, since: String? = nil, until: String? = nil, input: String? = nil, output: String? = nil) {
        self.format = format
        self.since = since
        self.until = until
        self.input = input
        self.output = output
    }

    /// Whether the export writes a file (`--output`, not `-`), which a signal must not leave half written.
    package var writesFile: Bool { output != nil && output != "-" }
}

extension Exporter {
    /// `export` whole: the spool (read-only) or the `--input` file, written in `request.format`
    /// to stdout or all-or-nothing to `--output`, and on the logger what was read and what
    /// was left out. `guarding` is called with the pending output file while it is written and
    /// returns what keeps it safe until then (the command line's signal handlers, which
    /// remove it); `nil` for stdout.
    /// - Throws: `GeolocateError`: `.usage` (64) for a bad time or an output that is the
    ///   configuration, the input or in the state directory; `.inputMissing` (66); every error of `run`.
    package static func command(_ context: CommandContext, _ request: ExportRequest,
                                guarding: (PendingFile) -> Any? = { _ in nil }) throws {
        let exporter = try Exporter(format: request.format, policy: OutputPolicy(settings: context.settings),
                                    since: request.since, until: request.until, clock: context.clock)
        let stateDirectory = context.stateDirectory
        let protected = [(path: context.configPath, what: "the configuration file")]
            + (request.input.flatMap { $0 == "-" ? nil : [(path: $0, what: "the --input file")] } ?? [])
        if let output = request.output, request.writesFile {
            _ = try refuseOutput(output, stateDirectory: stateDirectory, protected: protected)
        }
        let source: Input
        var opened: Int32?
        switch request.input {
        case nil:
            source = try spoolInput(stateDirectory: stateDirectory, elapsed: context.elapsed)
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
        let guardian = request.writesFile ? guarding(temporary) : nil
        let summary = try exporter.run(from: source, to: request.output, stateDirectory: stateDirectory, temporary: temporary,
                                       protected: protected)
        withExtendedLifetime(guardian) {}
        let logger = context.logger
        // Which state directory was read, as status says it: a user without one of their own
        // reads the system's (SPEC §16).
        if request.input == nil { logger.notice("exported the spool of \(stateDirectory)") }
        if summary.withoutFix > 0 {
            logger.notice("\(summary.withoutFix) records without a location left out")
        }
        if summary.coordinatesWithheld > 0 {
            logger.notice(request.format.keepsRecordsWithoutCoordinates
                ? "\(summary.coordinatesWithheld) rows without coordinates: privacy.precision or privacy.locationAttributeFilter withholds them"
                : "\(summary.coordinatesWithheld) records left out: privacy.precision or privacy.locationAttributeFilter withholds their coordinates, which \(request.format.rawValue) needs (csv keeps them as rows)")
        }
    }
}
