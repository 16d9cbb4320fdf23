import ArgumentParser
import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Mosquitto

struct FlushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flush",
        abstract: "Send the spooled records to the configured endpoints.",
        discussion: """
            Each endpoint (endpoints.NAME.url: http(s), mqtt or mqtts) gets what it has not \
            acknowledged; failures are retried with backoff and the rest stays spooled. Exit \
            0 all delivered, 75 records still pending, 78 an endpoint is misconfigured. \
            Quiet when all went well (for cron): --verbose prints a summary per endpoint. \
            Times in --json are epoch milliseconds. More: man geolocate.

            Examples:
              geolocate config set endpoints.main.url https://example.net/locations
              geolocate flush --json | jq '.endpoints[] | {name, sent, pending}'
            """
    )

    @Option(name: .customLong("endpoint"), help: ArgumentHelp("Flush only this endpoint (repeatable).", valueName: "name"))
    var endpoints: [String] = []

    @Option(name: .customLong("batch-size"), help: ArgumentHelp("Records per request, 1 to 100000 (default: batchSize).", valueName: "n"))
    var batchSize: Int?

    @Flag(name: .customLong("dry-run"), help: "Send nothing; report what is pending.")
    var dryRun = false

    @Flag(name: .long, help: "Print a JSON summary per endpoint on stdout.")
    var json = false

    @Flag(name: .customLong("ignore-retry-after"), help: "Try endpoints a Retry-After or backoff parked.")
    var ignoreRetryAfter = false

    @Flag(name: .customLong("dead-letters"), help: "List the records endpoints refused.")
    var listDeadLetters = false

    @Flag(name: .customLong("requeue-dead-letters"), help: "Queue the dead letters (all, or IDs) again.")
    var requeueDeadLetters = false

    @Argument(help: ArgumentHelp("Dead letters to requeue (default all).", valueName: "id"))
    var ids: [String] = []

    @Flag(name: .long, help: "Log a summary per endpoint and diagnostics on stderr (retries, waits).")
    var verbose = false

    @OptionGroup var globalOptions: GlobalOptions

    func validate() throws {
        // The range endpoints.NAME.batchSize takes: what config set refuses, the flag refuses too.
        let batchSizes = ConfigKey.endpointBatchSize.kind
        if let batchSize, (try? batchSizes.parse(String(batchSize))) == nil {
            throw ValidationError("--batch-size must be \(batchSizes.valid), not \(batchSize)")
        }
        if listDeadLetters && requeueDeadLetters { throw ValidationError("--dead-letters and --requeue-dead-letters cannot be used together") }
        if !ids.isEmpty && !requeueDeadLetters { throw ValidationError("record ids are only taken with --requeue-dead-letters") }
    }

    func run() async throws {
        try await runReportingErrors {
            let logger = DiagnosticLog.logger(verbose: verbose)
            let environment = globalOptions.environment
            if listDeadLetters || requeueDeadLetters {
                let spool = try Spool(stateDirectory: Paths.stateDirectory(environment: environment), clock: globalOptions.clock)
                if requeueDeadLetters {
                    let count = try spool.requeueDeadLetters(ids: ids, now: globalOptions.clock.nowMilliseconds)
                    logger.notice("\(count) dead letter\(count == 1 ? "" : "s") back in the queue for the next flush")
                } else {
                    try printDeadLetters(spool.deadLetters())
                }
                return
            }
            let store = globalOptions.configStore
            let report = try await Delivery.flush(
                settings: try store.settings(), configPath: store.path, environment: environment, logger: logger,
                only: endpoints.isEmpty ? nil : endpoints, batchSize: batchSize, dryRun: dryRun,
                ignoringRetryAfter: ignoreRetryAfter, mqtt: MosquittoTransport(elapsed: globalOptions.elapsed),
                clock: globalOptions.clock, elapsed: globalOptions.elapsed)
            if json { try FileHandleOutput.stdout(report.json() + "\n") }
            let misconfigured = report.endpoints.firstIndex { $0.endpointError != nil }
            // The endpoint flush ends on gets its error line alone, not a summary of nothing sent too.
            for (index, endpoint) in report.endpoints.enumerated() where index != misconfigured {
                if endpoint.parked, let notBefore = endpoint.nextRetryAt {
                    // Said with --json too: a run that passed an endpoint over is not silent.
                    logger.notice("\(endpoint.name): skipped until \(TimeText.iso8601(notBefore)), as a Retry-After or backoff asked after: \(endpoint.lastError ?? "a failure"); \(endpoint.pending) pending (flush --ignore-retry-after tries now)")
                } else if !json, verbose || endpoint.pending > 0 || endpoint.deadLettered > 0 {
                    // Quiet on success (SPEC §14): cron mails whatever a run prints.
                    let why = endpoint.pending > 0 ? endpoint.lastError.map { " (\($0))" } ?? "" : ""
                    logger.notice("\(endpoint.name): \(endpoint.sent) sent, \(endpoint.pending) pending\(why), \(endpoint.deadLettered) dead-lettered, \(endpoint.expired) expired")
                }
            }
            if let wrong = report.misconfigured.first {
                let isPostURL = wrong.name.contains("://")
                let place = isPostURL ? "the --post URL \(wrong.url)" : "endpoint \(wrong.name) (\(wrong.url))"
                let error = wrong.endpointError ?? ""
                let check = isPostURL ? "the URL given to trigger --post"
                    : wrong.url.lowercased().hasPrefix("mqtt") ? "endpoints.\(wrong.name).url, its username, password and TLS files"
                    : "endpoints.\(wrong.name).url and its headers"
                // An error that names the setting to change (a TLS file) needs no other hint.
                let hint = error.contains("endpoints.\(wrong.name).") || error.contains("--post URL") || error.hasPrefix("device key")
                    ? "" : " (check \(check))"
                throw GeolocateError.endpointRefused("\(place): \(error); its records stay pending\(hint)")
            }
            if !report.allDelivered && !dryRun { throw ExitCode(75) }
        }
    }

    /// One line per dead letter (endpoint, id, status, reason, when), or a JSON array with --json.
    private func printDeadLetters(_ letters: [Spool.DeadLetterEntry]) throws {
        let letters = letters.map { letter in
            var shown = letter
            shown.endpoint = ConfigStore.redactedURL(letter.endpoint)
            return shown
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try FileHandleOutput.stdout(String(decoding: (try? encoder.encode(letters)) ?? Data("[]".utf8), as: UTF8.self) + "\n")
            return
        }
        for letter in letters {
            // Escaped: a tab, newline or escape sequence in a field must not break the columns
            // or drive the terminal.
            let fields = [letter.endpoint, letter.id, letter.status.map(String.init) ?? "-", letter.reason, TimeText.iso8601(letter.at)]
            try FileHandleOutput.stdout(fields.map(StandardError.oneLine).joined(separator: "\t") + "\n")
        }
    }
}
