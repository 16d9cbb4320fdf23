import Foundation
import GeolocateConfig
import GeolocateModel
import GeolocateSpool

/// What `flush` asks for: which endpoints, how, and what it prints.
package struct FlushRequest: Sendable {
    /// `--endpoint`: these endpoints only; all when empty.
    package var endpoints: [String] = []
    /// `--batch-size`: else each endpoint's `batchSize`.
    package var batchSize: Int?
    package var dryRun = false
    package var ignoringRetryAfter = false
    /// `--json`: the summary on stdout.
    package var json = false
    /// `--verbose`: a line per endpoint even when all went well.
    package var verbose = false

    package init(endpoints: [String] = [], batchSize: Int? = nil, dryRun: Bool = false, ignoringRetryAfter: Bool = false,
                 json: Bool = false, verbose: Bool = false) {
        self.endpoints = endpoints
        self.batchSize = batchSize
        self.dryRun = dryRun
        self.ignoringRetryAfter = ignoringRetryAfter
        self.json = json
        self.verbose = verbose
    }
}

extension Delivery {
    /// `flush` whole: flushes, writes the `--json` summary to `write`, says on the logger what
    /// each endpoint was left with (quiet when all went well: cron mails whatever a run
    /// prints), and says how the command ends: `.success` when all is delivered,
    /// `.temporaryFailure` (75) while records are pending.
    /// - Throws: `GeolocateError.endpointRefused` (78) naming the first misconfigured endpoint
    ///   and what to check; every error of `flush`.
    package static func flushCommand(_ context: CommandContext, _ request: FlushRequest, mqtt: MQTTTransport?,
                                     write: (String) throws -> Void) async throws -> ExitStatus {
        let report = try await flush(context, only: request.endpoints.isEmpty ? nil : request.endpoints, batchSize: request.batchSize,
                                     dryRun: request.dryRun, ignoringRetryAfter: request.ignoringRetryAfter, mqtt: mqtt)
        if request.json { try write(report.json()) }
        let logger = context.logger
        let misconfigured = report.endpoints.firstIndex { $0.endpointError != nil }
        // The endpoint flush ends on gets its error line alone, not a summary of nothing sent too.
        for (index, endpoint) in report.endpoints.enumerated() where index != misconfigured {
            if endpoint.parked, let notBefore = endpoint.nextRetryAt {
                // Said with --json too: a run that passed an endpoint over is not silent.
                logger.notice("\(endpoint.name): skipped until \(TimeText.iso8601(notBefore)), as a Retry-After or backoff asked after: \(endpoint.lastError ?? "a failure"); \(endpoint.pending) pending (flush --ignore-retry-after tries now)")
            } else if !request.json, request.verbose || endpoint.pending > 0 || endpoint.deadLettered > 0 {
                let why = endpoint.pending > 0 ? endpoint.lastError.map { " (\($0))" } ?? "" : ""
                logger.notice("\(endpoint.name): \(endpoint.sent) sent, \(endpoint.pending) pending\(why), \(endpoint.deadLettered) dead-lettered, \(endpoint.expired) expired")
            }
        }
        if let wrong = report.misconfigured.first { throw refusal(of: wrong) }
        return !report.allDelivered && !request.dryRun ? .temporaryFailure : .success
    }

    /// The error a misconfigured endpoint ends flush with: what failed, and what to check
    /// unless the failure names the setting to change already (a TLS file, the device key).
    static func refusal(of wrong: EndpointReport) -> GeolocateError {
        let isPostURL = wrong.name.contains("://")
        let place = isPostURL ? "the --post URL \(wrong.url)" : "endpoint \(wrong.name) (\(wrong.url))"
        let error = wrong.endpointError ?? ""
        let check = isPostURL ? "the URL given to trigger --post"
            : wrong.url.lowercased().hasPrefix("mqtt") ? "endpoints.\(wrong.name).url, its username, password and TLS files"
            : "endpoints.\(wrong.name).url and its headers"
        let hint = error.contains("endpoints.\(wrong.name).") || error.contains("--post URL") || error.hasPrefix("device key")
            ? "" : " (check \(check))"
        return GeolocateError.endpointRefused("\(place): \(error); its records stay pending\(hint)")
    }

    /// `flush --dead-letters`: one line per dead letter (endpoint, id, status, reason, when),
    /// or with `json` one JSON array, each written to `write`.
    package static func listDeadLetters(_ context: CommandContext, json: Bool, write: (String) throws -> Void) throws {
        let letters = try Spool(stateDirectory: context.stateDirectory, clock: context.clock).deadLetters().map { letter in
            var shown = letter
            shown.endpoint = ConfigStore.redactedURL(letter.endpoint)
            return shown
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return try write(String(decoding: (try? encoder.encode(letters)) ?? Data("[]".utf8), as: UTF8.self))
        }
        for letter in letters {
            // Escaped: a tab, newline or escape sequence in a field must not break the columns
            // or drive the terminal.
            let fields = [letter.endpoint, letter.id, letter.status.map(String.init) ?? "-", letter.reason, TimeText.iso8601(letter.at)]
            try write(fields.map(ErrorText.oneLine).joined(separator: "\t"))
        }
    }

    /// `flush --requeue-dead-letters [ID...]`: the dead letters (all, or `ids`) queued again,
    /// said on the logger.
    package static func requeueDeadLetters(_ context: CommandContext, ids: [String]) throws {
        let spool = try Spool(stateDirectory: context.stateDirectory, clock: context.clock)
        let count = try spool.requeueDeadLetters(ids: ids, now: context.clock.nowMilliseconds)
        context.logger.notice("\(count) dead letter\(count == 1 ? "" : "s") back in the queue for the next flush")
    }
}
