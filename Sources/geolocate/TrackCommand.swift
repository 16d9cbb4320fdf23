import ArgumentParser
import Foundation
import GPSD
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
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

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "Emit after this long, with a unit: \(TrackPolicy.intervalRangeText) (\(DurationText.format(TrackPolicy.defaultIntervalMilliseconds))).",
        valueName: "duration"),
            transform: RefusedValue.checking("--interval") { try DurationText.milliseconds($0, bareUnit: .refused) })
    var interval: Int64?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "Emit after moving this far: \(TrackPolicy.distanceRangeText) (\(Int(TrackPolicy.defaultDistanceMetres))).", valueName: "metres"),
            transform: RefusedValue.number("--distance"))
    var distance: Double?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Drop fixes less accurate than this.", valueName: "level"))
    var accuracy: AccuracyLevel = .best

    @Option(name: .long, help: ArgumentHelp("Collect only in this local time window.", valueName: "HH:MM-HH:MM"),
            transform: RefusedValue.checking("--window", parse: CollectionWindow.init(parsing:)))
    var window: CollectionWindow?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Stop after this many records.", valueName: "n"),
            transform: RefusedValue.number("--count"))
    var count: Int?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Stop after this long, with a unit: 10m, 2h.", valueName: "duration"),
            transform: RefusedValue.checking("--duration") { try DurationFlag.positive($0, flag: "--duration") })
    var duration: Int64?

    @Flag(name: .long, help: "Also print each record as a JSON line.")
    var stdout = false

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("--stdout format.", valueName: "format"))
    var format: RecordFormat = .mosaic

    @Flag(name: .customLong("no-spool"), help: "Do not write records to the spool (needs --stdout).")
    var noSpool = false

    @Flag(name: .customLong("every-fix"), help: "Emit a record for every fix.")
    var everyFix = false

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Granted (else config).", valueName: "permission"))
    var permission: PermissionChoice?

    @Flag(name: .long, help: "Log diagnostics on stderr (counts, lines rejected).")
    var verbose = false

    @Option(name: .customLong("transmit-interval"), parsing: .unconditional, help: ArgumentHelp(
        "Flush this often, with a unit: 30m, 6h; or off.", valueName: "duration"),
            transform: RefusedValue.checking("--transmit-interval", parse: TransmitInterval.init(parsing:)))
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

    func run() async throws {
        try await runReportingErrors {
            let context = try globalOptions.context(verbose: verbose)
            let stop = StopFlag()
            let signals = SignalHandlers { _ in stop.request() }
            defer { withExtendedLifetime(signals) {} }
            let request = TrackRequest(source: sourceOptions.specifier, replaySpeed: sourceOptions.replaySpeed, permission: permission?.granted,
                                       toStdout: stdout, toSpool: !noSpool, format: format)
            try await Tracker.command(context, flags: flags, request: request, stop: stop,
                                      openSource: SourceOpener.withGPSD.trustingOnlySystemListeners().open,
                                      mqtt: { MosquittoTransport(elapsed: context.elapsed) },
                                      write: { FileHandleOutput.write(1, $0, giveUp: { stop.isRequested }) })
        }
    }

    /// The filters, limits and cadence the flags ask for.
    var flags: TrackFlags {
        var flags = TrackFlags()
        flags.interval = interval
        flags.distance = distance
        flags.accuracy = accuracy
        flags.window = window
        flags.count = count
        flags.duration = duration
        flags.everyFix = everyFix
        flags.transmitInterval = transmitInterval
        return flags
    }
}

extension TransmitInterval {
    /// `--transmit-interval off`, or a duration above 0.
    init(parsing text: String) throws {
        self = text == "off" ? .off : .every(milliseconds: try DurationFlag.positive(text, flag: "--transmit-interval"))
    }
}

extension RecordFormat: ExpressibleByArgument {
    package init?(argument: String) {
        guard let format = RefusedValue.choice(argument, RecordFormat.init(rawValue:)) else { return nil }
        self = format
    }
}

extension AccuracyLevel: ExpressibleByArgument {
    package init?(argument: String) {
        guard let level = RefusedValue.choice(argument, AccuracyLevel.init(rawValue:)) else { return nil }
        self = level
    }
}
