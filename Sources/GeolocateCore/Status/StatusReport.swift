import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool

/// What `geolocate status` reports (SPEC §12): where state lives, what waits in the spool and
/// for which endpoint, the last fix, whether gpsd answers, and the geocoder cache.
package struct StatusReport: Sendable, Encodable {
    package var stateDirectory: String
    /// Whether the state directory exists: status reports a missing one, never makes it.
    package var stateDirectoryExists: Bool
    package var configPath: String
    /// The device id tokens carry (`iss`), when the state directory has one.
    package var iss: String?
    /// When the writers' summary (`status.json`) that status read instead of the spool,
    /// which this user may not read, was written (epoch ms); `nil` when it read the spool.
    package var summaryWrittenAt: Int64?
    /// The source in force: `gpsd://HOST:PORT` or `nmea:FILE`.
    package var source: String
    package var spool: SpoolStatus
    package var endpoints: [EndpointStatus]
    package var lastFix: LastFixStatus?
    /// gpsd as it answered just now, when it is the source.
    package var gpsd: GPSDHealth?
    /// Street geocoder answers cached, when the cache exists.
    package var geocoderCacheEntries: Int?

    package struct SpoolStatus: Sendable, Encodable {
        /// Whether the spool could be read; the counts are there only when it could (0 when
        /// there is no spool yet).
        package var state: SpoolState
        /// What is wrong with it, in words, when `state` is not `ok` or `none`.
        package var problem: String?
        /// Its schema version (`PRAGMA user_version`), when it could be opened.
        package var schemaVersion: Int?
        /// Records waiting for at least one endpoint.
        package var pending: Int?
        /// How old the oldest of them is (ms), by the time it was recorded.
        package var oldestPendingAgeMs: Int64?
        package var deadLetters: Int?
        /// Records expired unsent, ever.
        package var expired: Int?
        /// Records expired unsent in the last 24 h: a WARNING for `--check`.
        package var expiredLast24h: Int?
        /// Delivered records kept for export (`spool.keepDelivered`).
        package var keptDelivered: Int?

        /// An empty spool's counts: no spool yet, or no state directory.
        static let absent = SpoolStatus(state: .absent, pending: 0, deadLetters: 0, expired: 0, expiredLast24h: 0, keptDelivered: 0)
    }

    /// What status found of the spool.
    package enum SpoolState: String, Sendable, Encodable {
        /// Read.
        case ok
        /// No spool yet (no file, or no state directory): nothing was collected here.
        case absent = "none"
        /// Written by a geolocate older than the schema status reads; the next command that
        /// writes the spool upgrades it. A WARNING.
        case olderSchema
        /// Not a SQLite database, or SQLite finds it malformed: its records are lost to
        /// delivery. CRITICAL, and status exits 65.
        case damaged
        /// It cannot be read (permissions, a newer geolocate's schema): UNKNOWN, status exits 65.
        case unreadable
    }

    package struct EndpointStatus: Sendable, Encodable {
        package var name: String
        /// The URL without credentials.
        package var url: String
        /// Records waiting for it, when the spool could be read.
        package var pending: Int?
        /// Epoch milliseconds of the last delivery, if any.
        package var lastSuccessAt: Int64?
        package var lastError: String?
        /// Whether `lastError` is the endpoint's configuration (CRITICAL at once for `--check`)
        /// or may pass; absent for an error stored by a geolocate that did not keep it.
        package var lastErrorKind: EndpointErrorKind?
        /// Epoch milliseconds before which flush will not try it again (backoff, `Retry-After`).
        package var nextRetryAt: Int64?
    }

    package struct LastFixStatus: Sendable, Encodable {
        package var ageMs: Int64
        /// The fix's provider: `gpsd` or `NMEA_REPLAY`.
        package var source: String
        /// The fix's time; `nil` when read from the summary, which keeps no fix.
        package var recordTimestamp: Int64?
    }

    /// Gathers the report, reading the state directory without changing anything in it
    /// (SPEC §12): the spool read-only (`Spool.openForReading`), the last known location and
    /// the geocoder cache as they are; a missing directory or spool is reported, not made, and
    /// a damaged or unreadable spool is a `SpoolStatus.state`, not a failure.
    /// `probe` asks gpsd (`GPSDSource.probe`) when it is the source.
    /// - Throws: `GeolocateError` when the configured source cannot be read; `.stateUnreadable`
    ///   when the state directory is a file.
    package static func gather(_ context: CommandContext, probe: (_ host: String, _ port: Int) -> GPSDHealth) throws -> StatusReport {
        let (settings, configPath, environment) = (context.settings, context.configPath, context.environment)
        let (clock, elapsed, logger) = (context.clock, context.elapsed, context.logger)
        let now = clock.nowMilliseconds
        let stateDirectory = context.stateDirectory
        let source = try settings.resolvedSource(flag: nil, environment: environment)
        var directory = stat()
        let directoryExists = stat(stateDirectory, &directory) == 0
        // A file named as the state directory holds no state: said, not reported as empty.
        if directoryExists, directory.st_mode & S_IFMT != S_IFDIR {
            throw GeolocateError.stateUnreadable(path: stateDirectory, reason: "it is not a directory (check --state-dir or GEOLOCATE_STATE_DIR)")
        }
        var spoolStatus = SpoolStatus.absent
        let configured = settings.endpoints
        var endpoints = configured.map {
            EndpointStatus(name: $0.name, url: $0.redactedURL, pending: 0, lastSuccessAt: nil, lastError: nil, lastErrorKind: nil, nextRetryAt: nil)
        }
        var summary: StatusSummary?
        var iss = DeviceInfo.existingDeviceID(stateDirectory: stateDirectory)
        /// Takes the spool's counts, and each endpoint's share of them.
        func take(_ counts: StatusSummary.Counts, _ shares: [StatusSummary.EndpointSummary]) {
            spoolStatus.pending = counts.pending
            spoolStatus.oldestPendingAgeMs = counts.oldestPendingRecordedAt.map { max(0, now.subtractingClamped($0)) }
            spoolStatus.deadLetters = counts.deadLetters
            spoolStatus.expired = counts.expired
            spoolStatus.expiredLast24h = counts.expiredLast24h
            spoolStatus.keptDelivered = counts.keptDelivered
            for share in shares {
                guard let index = endpoints.firstIndex(where: { $0.name == share.name }) else { continue }
                endpoints[index].pending = share.pending
                endpoints[index].lastSuccessAt = share.lastSuccessAt
                endpoints[index].lastError = share.lastError
                endpoints[index].lastErrorKind = share.lastErrorKind
                endpoints[index].nextRetryAt = share.nextRetryAt.flatMap { $0 > now ? $0 : nil }
            }
        }
        do {
            if let spool = try Spool.openForReading(stateDirectory: stateDirectory, elapsed: elapsed) {
                spoolStatus = SpoolStatus(state: .ok, schemaVersion: spool.schemaVersion)
                if spool.schemaVersion < Spool.oldestReadableSchema {
                    spoolStatus.state = .olderSchema
                    spoolStatus.problem = "written by an older geolocate (schema version \(spool.schemaVersion)); the next command that writes it (track, trigger, flush) upgrades it"
                    for index in endpoints.indices { endpoints[index].pending = nil }
                } else {
                    let (counts, shares) = try StatusSummary.counts(of: spool, endpoints: configured, now: now)
                    take(counts, shares)
                }
            }
        } catch let error as GeolocateError {
            if error.isRefusedStateFile {
                // Something planted in the state directory is no state of the spool's: said as an error (73).
                throw error
            } else if error.isSpoolDamaged {
                spoolStatus = SpoolStatus(state: .damaged, problem: error.reason)
                for index in endpoints.indices { endpoints[index].pending = nil }
            } else {
                // A monitoring user may not read the spool: the summary the writers keep says
                // its counts (SPEC §16).
                summary = StatusSummary.read(stateDirectory: stateDirectory)
                if let summary {
                    spoolStatus = SpoolStatus(state: .ok)
                    take(summary.spool, summary.endpoints)
                    iss = iss ?? summary.iss
                } else {
                    spoolStatus = SpoolStatus(state: .unreadable, problem: error.description)
                    for index in endpoints.indices { endpoints[index].pending = nil }
                }
            }
        }
        var lastFix: LastFixStatus?
        if let summary {
            // The last known location is the services' alone: its age as the summary says it.
            lastFix = summary.lastFixAgeMs.map {
                LastFixStatus(ageMs: $0.addingClamped(max(0, now.subtractingClamped(summary.writtenAt))), source: summary.lastFixSource ?? "", recordTimestamp: nil)
            }
        } else {
            let fix = try LastKnownStore(stateDirectory: stateDirectory, kind: .live, logger: logger).load(now: now)
            lastFix = fix.map { LastFixStatus(ageMs: FixAge.of($0, at: now, boot: clock.boot) ?? 0, source: $0.provider.rawValue, recordTimestamp: $0.timestamp) }
        }
        var gpsd: GPSDHealth?
        if case .gpsd(let host, let port) = source { gpsd = probe(host, port) }
        return StatusReport(
            stateDirectory: stateDirectory, stateDirectoryExists: directoryExists, configPath: configPath,
            iss: iss, summaryWrittenAt: summary?.writtenAt, source: source.description,
            spool: spoolStatus, endpoints: endpoints, lastFix: lastFix,
            gpsd: gpsd, geocoderCacheEntries: GeocoderCache(stateDirectory: stateDirectory).entryCount(elapsed: elapsed))
    }

    /// How `status` and `status --json` end after the report is printed: 65 when the spool is
    /// damaged or cannot be read (the report says why), else success.
    package var exitStatus: ExitStatus {
        spool.state == .damaged || spool.state == .unreadable ? .dataError : .success
    }

    /// The one line for stderr when `exitStatus` is not success.
    package var problemLine: String? {
        switch spool.state {
        case .damaged: return GeolocateError.spoolDamaged(path: StateFile.spool.path(in: stateDirectory), reason: spool.problem ?? "").description
        case .unreadable: return spool.problem
        default: return nil
        }
    }

    /// The ages `--check` judges by: past `warningMs` the oldest pending record or the last
    /// fix is a WARNING, past `criticalMs` CRITICAL (`-w`, `-c`).
    package struct Thresholds: Sendable, Equatable {
        package var warningMs: Int64
        package var criticalMs: Int64

        package init(warningMs: Int64 = StatusReport.warningAgeMs, criticalMs: Int64 = StatusReport.criticalAgeMs) {
            self.warningMs = warningMs
            self.criticalMs = criticalMs
        }
    }

    /// Past this age the oldest pending record or the last fix is a WARNING, unless `-w` says.
    package static let warningAgeMs: Int64 = 3_600_000
    /// Past this age it is CRITICAL, unless `-c` says.
    package static let criticalAgeMs: Int64 = 86_400_000

    /// The monitoring-plugins verdict: exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, and one
    /// line with perfdata. CRITICAL: an age past `critical`, dead letters, a damaged spool,
    /// gpsd down when it is the source, or an endpoint whose last attempt failed for its
    /// configuration (at once: waiting an hour would only pile records up). WARNING: an age
    /// past `warning`, records expired unsent in the last 24 h, a spool of an older schema.
    /// UNKNOWN: a spool status cannot read. The last fix is judged only when gpsd is the
    /// source: a replay has no device.
    package func check(_ thresholds: Thresholds = Thresholds()) -> (status: ExitStatus, line: String) {
        var critical: [String] = [], warning: [String] = [], unknown: [String] = []
        func judge(_ age: Int64?, _ what: String) {
            guard let age else { return }
            if age > thresholds.criticalMs { critical.append("\(what) \(Self.ageText(age)) old") }
            else if age > thresholds.warningMs { warning.append("\(what) \(Self.ageText(age)) old") }
        }
        switch spool.state {
        case .ok, .absent: break
        case .olderSchema: warning.append("spool \(spool.problem ?? "")")
        case .damaged: critical.append("spool damaged: \(spool.problem ?? "")")
        case .unreadable: unknown.append(spool.problem ?? "spool unreadable")
        }
        for endpoint in endpoints {
            switch endpoint.lastErrorKind {
            case .configuration?:
                critical.append("endpoint \(endpoint.name) failed: \(endpoint.lastError ?? "")")
            case .unreachable?:
                // Met during a login: CRITICAL once records have waited the warning age for it.
                let waited = (spool.oldestPendingAgeMs ?? 0) > thresholds.warningMs
                (waited ? { critical.append($0) } : { warning.append($0) })("endpoint \(endpoint.name) unreachable: \(endpoint.lastError ?? "")")
            default:
                break
            }
        }
        judge(spool.oldestPendingAgeMs, "oldest pending record")
        let deadLetters = spool.deadLetters ?? 0, recentlyExpired = spool.expiredLast24h ?? 0
        if deadLetters > 0 { critical.append("\(deadLetters) dead letter\(deadLetters == 1 ? "" : "s")") }
        if recentlyExpired > 0 {
            warning.append("\(recentlyExpired) record\(recentlyExpired == 1 ? "" : "s") expired unsent in the last 24h")
        }
        if let gpsd {
            if !gpsd.reachable { critical.append("gpsd unreachable (\(gpsd.error ?? "no answer"))") }
            if let lastFix { judge(lastFix.ageMs, "last fix") } else { warning.append("no fix recorded yet") }
        }
        let status: ExitStatus = !unknown.isEmpty ? .checkUnknown : !critical.isEmpty ? .checkCritical : !warning.isEmpty ? .checkWarning : .checkOK
        let label = ["OK", "WARNING", "CRITICAL", "UNKNOWN"][Int(status.rawValue)]
        var summary = (status == .checkUnknown ? unknown : []) + critical + warning
        if summary.isEmpty {
            summary = [spool.state == .absent ? "no spool yet, 0 pending" : "\(spool.pending ?? 0) pending"]
                + (lastFix.map { ["last fix \(Self.ageText($0.ageMs)) ago"] } ?? [])
        }
        let warn = thresholds.warningMs / 1000, crit = thresholds.criticalMs / 1000
        var perfdata: [String] = []
        if let pending = spool.pending {
            perfdata += ["pending=\(pending);;;0", "oldest_pending=\((spool.oldestPendingAgeMs ?? 0) / 1000)s;\(warn);\(crit);0",
                         "dead_letters=\(deadLetters);;0;0", "expired=\(spool.expired ?? 0)c;;;0"]
        }
        if let lastFix { perfdata.append("last_fix_age=\(lastFix.ageMs / 1000)s;\(warn);\(crit);0") }
        // The state directory read is named: a monitor reading the wrong one must see it.
        let line = "GEOLOCATE \(label) - \(summary.joined(separator: ", ").replacingOccurrences(of: "|", with: "/")) (state \(stateDirectory.replacingOccurrences(of: "|", with: "/")))"
        return (status, perfdata.isEmpty ? line : line + " | " + perfdata.joined(separator: " "))
    }

    /// `90s`, `12m`, `5h`, `3d`: the largest whole unit.
    static func ageText(_ milliseconds: Int64) -> String {
        let seconds = milliseconds / 1000
        if seconds < 120 { return "\(seconds)s" }
        if seconds < 7200 { return "\(seconds / 60)m" }
        if seconds < 172_800 { return "\(seconds / 3600)h" }
        return "\(seconds / 86_400)d"
    }

    /// The report as aligned `key: value` lines.
    package var text: String {
        var rows: [(String, String)] = [("state directory", stateDirectory + (stateDirectoryExists ? "" : " (does not exist yet)")),
                                        ("config", configPath), ("device id", iss ?? "none yet"), ("source", source)]
        switch spool.state {
        case .ok, .olderSchema:
            if let problem = spool.problem { rows.append(("spool", problem)) }
            if let written = summaryWrittenAt {
                rows.append(("spool", "not readable by this user; counts from status.json, written \(TimeText.iso8601(written))"))
            }
        case .absent: rows.append(("spool", "none yet"))
        case .damaged: rows.append(("spool", "damaged: \(spool.problem ?? "")"))
        case .unreadable: rows.append(("spool", "unreadable: \(spool.problem ?? "")"))
        }
        func count(_ value: Int?) -> String { value.map(String.init) ?? "unknown" }
        rows.append(("pending", count(spool.pending) + (spool.oldestPendingAgeMs.map { " (oldest \(Self.ageText($0)) old)" } ?? "")))
        rows += [("dead letters", count(spool.deadLetters)),
                 ("expired", count(spool.expired) + (spool.expiredLast24h.map { " (\($0) in the last 24h)" } ?? "")),
                 ("kept delivered", count(spool.keptDelivered))]
        for endpoint in endpoints {
            var parts = ["\(count(endpoint.pending)) pending", "last success " + (endpoint.lastSuccessAt.map(TimeText.iso8601) ?? "never")]
            if let error = endpoint.lastError {
                parts.append((endpoint.lastErrorKind == .configuration ? "last error (configuration): " : "last error: ") + error)
            }
            if let retry = endpoint.nextRetryAt { parts.append("next try after \(TimeText.iso8601(retry))") }
            rows.append(("endpoint \(endpoint.name)", "\(endpoint.url): " + parts.joined(separator: ", ")))
        }
        rows.append(("last fix", lastFix.map { "\(Self.ageText($0.ageMs)) ago from \($0.source)" + ($0.recordTimestamp.map { " (\(TimeText.iso8601($0)))" } ?? "") } ?? "none"))
        if let gpsd {
            rows.append(("gpsd", gpsd.reachable
                ? "reachable" + (gpsd.device.map { ", device \($0)" } ?? "") + ", fix " + (gpsd.fixMode ?? "none")
                : "unreachable: \(gpsd.error ?? "no answer")"))
            if let health = gpsd.receiverHealth { rows.append(("receiver", health)) }
            if let verdicts = gpsd.receiverVerdicts { rows.append(("UBX verdicts", verdicts)) }
        }
        rows.append(("geocoder cache", geocoderCacheEntries.map { "\($0) entries" } ?? "none"))
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0 + ":" + String(repeating: " ", count: width - $0.0.count + 1) + $0.1 }.joined(separator: "\n")
    }

    /// The report as one JSON object.
    package var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
