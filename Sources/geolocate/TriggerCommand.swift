import ArgumentParser
import Foundation
import GeolocateCore
import Mosquitto
import GPSD

struct TriggerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trigger",
        abstract: "Report the location for one risk event as a JSON record.",
        discussion: """
            MODE is default, disabled, force-current, force-last-known or last-known:N \
            (N minutes, or 90s, 30m, 2h). Each setting is taken from its flag, else the \
            configuration file, else the built-in default: the mode from --mode, \
            actions.NAME.mode, the built-in per-action table, defaultInterval; the timeout \
            from --timeout, actions.NAME.timeout, triggerActionQueryTimeout (1500 ms).

            --format mosaic prints the record (what is spooled and sent), veridium its Veridium \
            location object ({"coordinates": {"latitude", "longitude"}, "accuracy", "countryCode", \
            "district", "city", "street", "streetNumber", "errorCode"}; numbers, null when \
            unknown, absent when privacy withholds them), openlocate the record as an openlocate \
            endpoint receives it, owntracks an OwnTracks location message (lat, lon, acc m, \
            alt m above sea level, vel km/h, cog, tst s, tid from owntracks.tid), osmand \
            Traccar's OsmAnd query (id, lat, lon, timestamp s, altitude m, speed knots, bearing, \
            accuracy). privacy.* applies to all of them (see geolocate --help).

            --post URL sends the record at once as a JSON object, --endpoint NAME as that \
            configured endpoint's format; if that fails, the record goes to the spool for the \
            next flush, with a warning, and the exit code is still 0.

            --policy adds the location policy's decision (policy.zones, policy.countries) to the \
            record: allow, deny or undetermined, judged on the circle of the fix's accuracy. \
            --enforce also exits 4, with the reason on stderr, unless the decision is allow \
            (undetermined counts as policy.undetermined says); the record is still printed.

            Exit 0 whenever a record was printed; 3 with --require-location when it has no location; \
            4 with --enforce when the policy does not allow.
            """
    )

    @Argument(help: "The risk event, such as login, transaction or logout.")
    var action: String

    @Option(name: .long, help: ArgumentHelp("Collection mode (see below).", valueName: "mode"), transform: CollectionMode.init(parsing:))
    var mode: CollectionMode = .default

    @Option(name: .long, help: ArgumentHelp("Query timeout with its unit, such as 1500ms or 2s (up to 10m).", valueName: "duration"),
            transform: DurationFlag.queryTimeout)
    var timeout: Int64?

    @OptionGroup var sourceOptions: SourceOptions

    @Option(name: .long, help: ArgumentHelp("Output format: mosaic (the record), veridium (its location object), openlocate, owntracks or osmand (the query).", valueName: "format"))
    var format: RecordFormat = .mosaic

    @Option(name: .long, help: ArgumentHelp("Permission for this call: fine, coarse or none (default: config permissions).", valueName: "permission"))
    var permission: PermissionChoice?

    @Option(name: .long, help: ArgumentHelp("Use this time as now: ISO 8601 or epoch milliseconds.", valueName: "time"),
            transform: TimeText.milliseconds)
    var now: Int64?

    @Flag(name: .customLong("require-location"), help: "Exit 3 when the record has no location.")
    var requireLocation = false

    @Flag(name: .long, help: "Add the location policy's decision (policy.*) to the record.")
    var policy = false

    @Flag(name: .long, help: "Exit 4 unless the location policy allows (implies --policy).")
    var enforce = false

    @Flag(name: .long, help: "Log debug diagnostics (connections, waits) on stderr.")
    var verbose = false

    @Option(name: .long, help: ArgumentHelp("Also POST the record to this URL (spooled if that fails).", valueName: "url"),
            transform: checkedPostURL)
    var post: String?

    @Option(name: .long, help: ArgumentHelp("Also send the record to this configured endpoint (spooled if that fails).", valueName: "name"))
    var endpoint: String?

    @OptionGroup var globalOptions: GlobalOptions

    func validate() throws {
        if post != nil && endpoint != nil { throw ValidationError("--post and --endpoint cannot be used together") }
        do {
            try Trigger.validate(action: action)
        } catch let error as GeolocateError {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        try await runReportingErrors {
            let logger = DiagnosticLog.logger(verbose: verbose)
            let settings = try ConfigStore(path: globalOptions.configPath).settings()
            // An unknown endpoint is refused before any record is printed.
            if let endpoint { _ = try settings.endpoint(named: endpoint, configPath: globalOptions.configPath) }
            let trigger = Trigger(settings: settings, environment: ProcessInfo.processInfo.environment, logger: logger,
                                  openSource: SourceOpener.withGPSD.open)
            let record = try await trigger.run(TriggerRequest(
                action: action,
                mode: mode,
                timeoutMilliseconds: timeout,
                permission: permission?.granted,
                now: now,
                source: sourceOptions.specifier,
                replaySpeed: sourceOptions.replaySpeed,
                policy: policy || enforce))
            // The record is still sent when stdout cannot take it; the failure is the exit code.
            let environment = ProcessInfo.processInfo.environment
            let sender = format.namesTheDevice ? try Sender(settings: settings, stateDirectory: Paths.stateDirectory(environment: environment)) : Sender()
            let printed = Result { try FileHandleOutput.stdout(format.line(record, policy: OutputPolicy(settings: settings), sender: sender) + "\n") }
            if let target = post.map(Delivery.Target.url) ?? endpoint.map(Delivery.Target.endpoint) {
                let destination = post.map(ConfigStore.redactedURL) ?? endpoint ?? ""
                switch try await Delivery.post(record, to: target, settings: settings, configPath: globalOptions.configPath,
                                               environment: environment, logger: logger, mqtt: MosquittoTransport()) {
                case .delivered: break
                case .spooled(let reason):
                    logger.warning("could not send the record to \(destination) (\(reason)); it is in the spool for the next flush")
                case .notCarried:
                    logger.notice("the record has no location, which the format of \(destination) cannot carry; it was not sent")
                }
            }
            if requireLocation && record.fix == nil {
                throw GeolocateError.locationRequired(reason: "errorCode \(record.errorCode.rawValue) (--require-location)")
            }
            try printed.get()
            if enforce, let decision = record.policy, !LocationPolicy.passes(decision, settings: settings) {
                throw GeolocateError.policyDenied(decision)
            }
        }
    }
}
