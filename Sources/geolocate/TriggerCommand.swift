import ArgumentParser
import Foundation
import GPSD
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
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

    @Option(name: .long, parsing: .unconditional,
            help: ArgumentHelp("default, disabled, force-current, force-last-known or last-known:N (N minutes, or 90s, 2h).", valueName: "mode"),
            completion: .list(CollectionMode.spellings), transform: RefusedValue.checking("--mode", parse: CollectionMode.init(parsing:)))
    var mode: CollectionMode = .default

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp(
        "Query timeout, with a unit: 1500ms, 2s (max \(DurationText.format(Defaults.maximumQueryTimeoutMilliseconds))).", valueName: "duration"),
            transform: RefusedValue.checking("--timeout", parse: DurationFlag.queryTimeout))
    var timeout: Int64?

    @OptionGroup var sourceOptions: SourceOptions

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Output format.", valueName: "format"), completion: .list(TriggerFormat.allValueStrings))
    var format: TriggerFormat = .record(.mosaic)

    @Option(name: .long, help: ArgumentHelp("jwt: the token's aud (default: signing.audience).", valueName: "audience"))
    var audience: String?

    /// Taken whatever it starts with: a base64url nonce may start with `-`.
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("jwt: the server's challenge for this login.", valueName: "nonce"))
    var nonce: String?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Granted (else config).", valueName: "permission"))
    var permission: PermissionChoice?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Take this time as now: ISO 8601 or epoch ms.", valueName: "time"),
            transform: RefusedValue.checking("--now", parse: TimeText.milliseconds))
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
            transform: RefusedValue.checking("--post", parse: checkedPostURL))
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
        if pam { throw CommandEnd(await runAsPAMHook()) }
        try await runReportingErrors {
            let context = try globalOptions.context(verbose: verbose)
            let trigger = Trigger(context, openSource: SourceOpener.withGPSD.trustingOnlySystemListeners().open)
            try await trigger.respond(to: request, output: output, mqtt: MosquittoTransport(elapsed: context.elapsed)) {
                try FileHandleOutput.stdout($0 + "\n")
            }
        }
    }

    /// The event and its collection, as the flags ask.
    var request: TriggerRequest {
        TriggerRequest(action: action, mode: mode, timeoutMilliseconds: timeout, permission: permission?.granted, now: now,
                       source: sourceOptions.specifier, replaySpeed: sourceOptions.replaySpeed, policy: policy || enforce)
    }

    /// How the record is printed and where it is sent, as the flags ask.
    var output: TriggerOutput {
        TriggerOutput(format: format, audience: audience, nonce: nonce, post: post, endpoint: endpoint,
                      requireLocation: requireLocation, enforce: enforce)
    }
}

extension TriggerFormat: ExpressibleByArgument {
    package init?(argument: String) {
        guard let format = RefusedValue.choice(argument, TriggerFormat.init(name:)) else { return nil }
        self = format
    }

    package var defaultValueDescription: String { name }

    package static var allValueStrings: [String] { allNames }
}

/// `--post URL`: an http or https URL, never quoted with its credentials.
func checkedPostURL(_ text: String) throws -> String {
    guard ConfigStore.isHTTPURL(text) else {
        throw GeolocateError.usage("invalid URL '\(ConfigStore.redactedURL(text))' (use http://HOST[:PORT]/PATH or https://...)")
    }
    return text
}
