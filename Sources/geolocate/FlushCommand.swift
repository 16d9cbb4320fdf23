import ArgumentParser
import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
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

    @Option(name: .customLong("batch-size"), parsing: .unconditional,
            help: ArgumentHelp("Records per request, 1 to 100000 (default: batchSize).", valueName: "n"), transform: RefusedValue.number("--batch-size"))
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
            // The dead letters are the state directory's alone.
            let context = try globalOptions.context(verbose: verbose, readingConfig: !listDeadLetters && !requeueDeadLetters)
            let write = { (line: String) in try FileHandleOutput.stdout(line + "\n") }
            if listDeadLetters { return try Delivery.listDeadLetters(context, json: json, write: write) }
            if requeueDeadLetters { return try Delivery.requeueDeadLetters(context, ids: ids) }
            let request = FlushRequest(endpoints: endpoints, batchSize: batchSize, dryRun: dryRun, ignoringRetryAfter: ignoreRetryAfter,
                                       json: json, verbose: verbose)
            let end = try await Delivery.flushCommand(context, request, mqtt: MosquittoTransport(elapsed: context.elapsed), write: write)
            if end != .success { throw CommandEnd(end) }
        }
    }
}
