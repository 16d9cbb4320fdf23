import ArgumentParser
import Foundation
import GeolocateCore

struct FlushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flush",
        abstract: "Send the spooled records to the configured endpoints.",
        discussion: """
            Endpoints are configured as endpoints.NAME.url, .headers.HEADER, .format \
            (openlocate, the default, or mosaic-ndjson), .batchSize (500) and .timeout (10s). \
            Each endpoint has its own cursor: 2xx is delivered; network errors, timeouts, \
            408, 429 and 5xx are retried up to 4 times with exponential backoff and jitter \
            (Retry-After honoured; a longer one ends the run for that endpoint) and otherwise \
            stay in the spool; any other 4xx splits the batch until the refused records are \
            alone, and those go to the dead-letter table. Every request carries an \
            Idempotency-Key that is the same whenever the same records are sent again, and \
            every record its id. A record leaves the spool when every endpoint has it, or \
            expires past spool.maxRetention. A flush covers the records spooled before it \
            began; two flushes at once take turns.

            Exit 0 when everything deliverable was delivered (or there was nothing to do), \
            75 when records are still pending, 78 when no endpoint is configured.
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

    @Flag(name: .long, help: "Log debug diagnostics (retries, waits) on stderr.")
    var verbose = false

    @OptionGroup var globalOptions: GlobalOptions

    func validate() throws {
        if let batchSize, batchSize < 1 { throw ValidationError("--batch-size must be at least 1") }
    }

    func run() async throws {
        try await runReportingErrors {
            let logger = DiagnosticLog.logger(verbose: verbose)
            let environment = ProcessInfo.processInfo.environment
            let store = ConfigStore(path: globalOptions.configPath)
            let report = try await Delivery.flush(
                settings: try store.settings(), configPath: store.path, environment: environment, logger: logger,
                only: endpoints.isEmpty ? nil : endpoints, batchSize: batchSize, dryRun: dryRun)
            if json {
                FileHandleOutput.stdout(report.json() + "\n")
            } else {
                for endpoint in report.endpoints {
                    logger.notice("\(endpoint.name): \(endpoint.sent) sent, \(endpoint.pending) pending, \(endpoint.deadLettered) dead-lettered, \(endpoint.expired) expired")
                }
            }
            if !report.allDelivered && !dryRun { throw ExitCode(75) }
        }
    }
}
