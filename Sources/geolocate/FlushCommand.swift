import ArgumentParser
import Foundation
import GeolocateCore
import Mosquitto

struct FlushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flush",
        abstract: "Send the spooled records to the configured endpoints.",
        discussion: """
            Endpoints are configured as endpoints.NAME.url, .headers.HEADER, .format \
            (openlocate, the default, mosaic-ndjson, mosaic, owntracks or osmand), .batchSize \
            (500) and .timeout (10s). An mqtt:// or mqtts:// URL publishes one message per \
            record to that broker and topic (.qos, .username, .password, .caFile, .certFile, \
            .keyFile); a record is delivered when the broker acknowledged it. \
            Each endpoint has its own cursor: 2xx is delivered; network errors, timeouts, \
            408, 429 and 5xx are retried up to 4 times with exponential backoff and jitter \
            (Retry-After honoured while a batch has waited at most 30 s in all; past that the \
            run ends for that endpoint) and otherwise \
            stay in the spool; 401, 403, 404, 405, 407 and redirects (never followed) mean the \
            endpoint or its credentials are wrong: its records stay pending, it is not tried \
            again in this run, and flush exits 78; any other 4xx splits the batch until the \
            refused records are alone, and those go to the dead-letter table (--dead-letters \
            lists them, --requeue-dead-letters puts them back). Records trigger --post could \
            not send go to their URL. Every request carries an \
            Idempotency-Key that is the same whenever the same records are sent again, and \
            every record its id. A record leaves the spool when every endpoint has it, or \
            expires past spool.maxRetention. A flush covers the records spooled before it \
            began; two flushes at once take turns.

            Exit 0 when everything deliverable was delivered (or there was nothing to do), \
            75 when records are still pending, 78 when no endpoint is configured or one \
            refused as wrongly configured.
            """
    )

    @Option(name: .customLong("endpoint"), help: ArgumentHelp("Flush only this endpoint (repeatable).", valueName: "name"))
    var endpoints: [String] = []

    @Option(name: .customLong("batch-size"), help: ArgumentHelp("Records per request, instead of each endpoint's batchSize.", valueName: "n"))
    var batchSize: Int?

    @Flag(name: .customLong("dry-run"), help: "Send nothing; report what is pending.")
    var dryRun = false

    @Flag(name: .long, help: "Print a JSON summary per endpoint on stdout.")
    var json = false

    @Flag(name: .customLong("ignore-retry-after"), help: "Try endpoints now even if a Retry-After (at most 24 h) or a backoff parked them.")
    var ignoreRetryAfter = false

    @Flag(name: .customLong("dead-letters"), help: "List the records endpoints refused, instead of flushing.")
    var listDeadLetters = false

    @Flag(name: .customLong("requeue-dead-letters"), help: "Put the dead letters (all, or the IDs given) back in the queue.")
    var requeueDeadLetters = false

    @Argument(help: ArgumentHelp("Dead letters to requeue (with --requeue-dead-letters; default all).", valueName: "id"))
    var ids: [String] = []

    @Flag(name: .long, help: "Log debug diagnostics (retries, waits) on stderr.")
    var verbose = false

    @OptionGroup var globalOptions: GlobalOptions

    func validate() throws {
        if let batchSize, batchSize < 1 { throw ValidationError("--batch-size must be at least 1") }
        if listDeadLetters && requeueDeadLetters { throw ValidationError("--dead-letters and --requeue-dead-letters cannot be used together") }
        if !ids.isEmpty && !requeueDeadLetters { throw ValidationError("record ids are only taken with --requeue-dead-letters") }
    }

    func run() async throws {
        try await runReportingErrors {
            let logger = DiagnosticLog.logger(verbose: verbose)
            let environment = ProcessInfo.processInfo.environment
            if listDeadLetters || requeueDeadLetters {
                let spool = try Spool(stateDirectory: Paths.stateDirectory(environment: environment))
                if requeueDeadLetters {
                    let count = try spool.requeueDeadLetters(ids: ids)
                    logger.notice("\(count) dead letter\(count == 1 ? "" : "s") back in the queue for the next flush")
                } else {
                    try printDeadLetters(spool.deadLetters())
                }
                return
            }
            let store = ConfigStore(path: globalOptions.configPath)
            let report = try await Delivery.flush(
                settings: try store.settings(), configPath: store.path, environment: environment, logger: logger,
                only: endpoints.isEmpty ? nil : endpoints, batchSize: batchSize, dryRun: dryRun,
                ignoringRetryAfter: ignoreRetryAfter, mqtt: MosquittoTransport())
            if json {
                try FileHandleOutput.stdout(report.json() + "\n")
            } else {
                for endpoint in report.endpoints {
                    let why = endpoint.pending > 0 ? endpoint.lastError.map { " (\($0))" } ?? "" : ""
                    logger.notice("\(endpoint.name): \(endpoint.sent) sent, \(endpoint.pending) pending\(why), \(endpoint.deadLettered) dead-lettered, \(endpoint.expired) expired")
                }
            }
            if let wrong = report.misconfigured.first {
                let isPostURL = wrong.name.contains("://")
                let place = isPostURL ? "the --post URL \(wrong.url)" : "endpoint \(wrong.name) (\(wrong.url))"
                let check = isPostURL ? "the URL given to trigger --post"
                    : wrong.url.hasPrefix("mqtt") ? "endpoints.\(wrong.name).url, its username, password and TLS files"
                    : "endpoints.\(wrong.name).url and its headers"
                throw GeolocateError.endpointRefused(
                    "\(place): \(wrong.endpointError ?? ""); its records stay pending (check \(check))")
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
