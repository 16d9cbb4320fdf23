import ArgumentParser
import Foundation
import GPSD
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Mosquitto

struct TriggerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trigger",
        abstract: "Report the location for one risk event as a JSON record.",
        discussion: """
            Mode and timeout: the flag, else actions.NAME.*, else built in (man geolocate).

            Examples:
              geolocate trigger checkout --mode last-known:5m --timeout 2s
              geolocate trigger login --format jwt --audience https://risk.example --nonce N
            """
    )

    @Argument(help: "The risk event: login, transaction, logout, ...")
    var action: String

    @Option(name: .long, help: ArgumentHelp("default, disabled, force-current, force-last-known or last-known:N (N minutes, or 90s, 2h).", valueName: "mode"),
            completion: .list(CollectionMode.spellings), transform: CollectionMode.init(parsing:))
    var mode: CollectionMode = .default

    @Option(name: .long, help: ArgumentHelp(
        "Query timeout, with a unit: 1500ms, 2s (max \(DurationText.format(Defaults.maximumQueryTimeoutMilliseconds))).", valueName: "duration"),
            transform: DurationFlag.queryTimeout)
    var timeout: Int64?

    @OptionGroup var sourceOptions: SourceOptions

    @Option(name: .long, help: ArgumentHelp("Output format.", valueName: "format"), completion: .list(TriggerFormat.allValueStrings))
    var format: TriggerFormat = .record(.mosaic)

    @Option(name: .long, help: ArgumentHelp("jwt: the token's aud (default: signing.audience).", valueName: "audience"))
    var audience: String?

    /// Taken whatever it starts with: a base64url nonce may start with `-`.
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("jwt: the server's challenge for this login.", valueName: "nonce"))
    var nonce: String?

    @Option(name: .long, help: ArgumentHelp("Granted (else config).", valueName: "permission"))
    var permission: PermissionChoice?

    @Option(name: .long, help: ArgumentHelp("Take this time as now: ISO 8601 or epoch ms.", valueName: "time"),
            transform: TimeText.milliseconds)
    var now: Int64?

    @Flag(name: .customLong("require-location"), help: "Exit 3 when the record has no location.")
    var requireLocation = false

    @Flag(name: .long, help: "Add the policy decision (policy.*) to the record.")
    var policy = false

    @Flag(name: .long, help: "Exit 4 unless the policy allows (implies --policy).")
    var enforce = false

    @Flag(name: .long, help: "The pam_exec login gate (silent; implies --enforce).")
    var pam = false

    @Flag(name: .long, help: "Log diagnostics on stderr (waits, lines rejected).")
    var verbose = false

    @Option(name: .long, help: ArgumentHelp("Also POST the record here (spooled if that fails).", valueName: "url"),
            transform: checkedPostURL)
    var post: String?

    @Option(name: .long, help: ArgumentHelp("Also send it to this configured endpoint.", valueName: "name"))
    var endpoint: String?

    @OptionGroup var globalOptions: GlobalOptions

    func validate() throws {
        if post != nil && endpoint != nil { throw ValidationError("--post and --endpoint cannot be used together") }
        if format == .jwt && now != nil { throw ValidationError("--now cannot be used with --format jwt: a token's times are the device's own") }
        if format != .jwt && (audience != nil || nonce != nil) { throw ValidationError("--audience and --nonce go with --format jwt") }
        for (flag, value) in [("--audience", audience), ("--nonce", nonce)] {
            if value == "" { throw ValidationError("\(flag) needs a value") }
            // A server logs what it checks (`PlainText`).
            if let value, !PlainText.isPlain(value) {
                throw ValidationError("\(flag) needs text without control characters")
            }
        }
        do {
            try Trigger.validate(action: action)
        } catch let error as GeolocateError {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        if pam { throw ExitCode(await withTaskExecutorPreference(WorkExecutor.shared) { await runAsPAMHook() }) }
        try await runReportingErrors {
            let logger = DiagnosticLog.logger(verbose: verbose)
            let settings = try globalOptions.configStore.settings()
            // An unknown endpoint is refused before any record is printed, and so is a token
            // dated by --now: a token's times are the device's own (SPEC §3).
            let environment = globalOptions.environment
            // --endpoint, else the action's own (actions.NAME.endpoint), unless --post says where.
            let endpoint = self.endpoint ?? (post == nil ? settings[ConfigKey.actionEndpoint, name: action] : nil)
            if let endpoint, try settings.endpoint(named: endpoint, configPath: globalOptions.configPath).format == .jwt {
                if now != nil {
                    throw GeolocateError.usage("--now cannot be used with a jwt endpoint (\(endpoint)): a token's times are the device's own")
                }
                // A key that cannot sign for it is said at once (78), as for --format jwt.
                _ = try TokenSigner(settings: settings, environment: environment, clock: globalOptions.clock)
            }
            // The key and the audience are checked before the source is asked: a token that
            // cannot be signed exits 78 (or 64) at once, not after the query timeout.
            let render = try renderer(settings: settings, environment: environment)
            let trigger = Trigger(settings: settings, environment: environment,
                                  clock: globalOptions.clock, elapsed: globalOptions.elapsed, logger: logger,
                                  openSource: SourceOpener.withGPSD.trustingOnlySystemListeners().open)
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
            let line = try render(record)
            let printed = Result { try FileHandleOutput.stdout(line + "\n") }
            if let target = post.map(Delivery.Target.url) ?? endpoint.map(Delivery.Target.endpoint) {
                let destination = post.map(ConfigStore.redactedURL) ?? endpoint ?? ""
                switch try await Delivery.post(record, to: target, settings: settings, configPath: globalOptions.configPath,
                                               environment: environment, logger: logger, mqtt: MosquittoTransport(elapsed: globalOptions.elapsed),
                                               clock: globalOptions.clock, elapsed: globalOptions.elapsed) {
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

extension TriggerCommand {
    /// How the record is printed: in its record format, or for `jwt` signed by the device key
    /// (`--audience`, else `signing.audience`, else a usage error, 64; no key: 78).
    func renderer(settings: Settings, environment: [String: String]) throws -> (Record) throws -> String {
        let policy = OutputPolicy(settings: settings)
        switch format {
        case .record(let recordFormat):
            let sender = recordFormat.namesTheDevice
                ? try Sender(settings: settings, stateDirectory: Paths.stateDirectory(environment: environment)) : Sender()
            return { recordFormat.line($0, policy: policy, sender: sender) }
        case .jwt:
            guard let audience = audience ?? settings[ConfigKey.signingAudience] else {
                throw GeolocateError.usage("--format jwt needs --audience (or signing.audience): the server the token is for")
            }
            var signer = try TokenSigner(settings: settings, environment: environment, clock: globalOptions.clock)
            signer.audience = audience
            let nonce = nonce
            return { try signer.token(for: $0, policy: policy, nonce: nonce) }
        }
    }
}

/// `trigger --format`: a record format, or `jwt`, the record signed as a location token.
enum TriggerFormat: ExpressibleByArgument, Equatable {
    case record(RecordFormat)
    case jwt

    init?(argument: String) {
        if argument == "jwt" {
            self = .jwt
        } else if let format = RecordFormat(rawValue: argument) {
            self = .record(format)
        } else {
            return nil
        }
    }

    var defaultValueDescription: String {
        switch self {
        case .record(let format): return format.rawValue
        case .jwt: return "jwt"
        }
    }

    static var allValueStrings: [String] { RecordFormat.allCases.map(\.rawValue) + ["jwt"] }
}

