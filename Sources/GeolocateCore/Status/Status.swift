import Foundation
import GRDB
import Logging

/// What `geolocate status` reports (SPEC §12): where state lives, what waits in the spool and
/// for which endpoint, the last fix, whether gpsd answers, and the geocoder cache.
public struct StatusReport: Sendable, Encodable {
    public var stateDirectory: String
    public var configPath: String
    /// The source in force: `gpsd://HOST:PORT` or `nmea:FILE`.
    public var source: String
    public var spool: SpoolStatus
    public var endpoints: [EndpointStatus]
    public var lastFix: LastFixStatus?
    /// gpsd as it answered just now, when it is the source.
    public var gpsd: GPSDHealth?
    /// Street geocoder answers cached, when the cache exists.
    public var geocoderCacheEntries: Int?

    public struct SpoolStatus: Sendable, Encodable {
        /// Records waiting for at least one endpoint.
        public var pending: Int
        /// How old the oldest of them is (ms), by the time it was recorded.
        public var oldestPendingAgeMs: Int64?
        public var deadLetters: Int
        /// Records expired unsent, ever.
        public var expired: Int
        /// Records expired unsent in the last 24 h: a WARNING for `--check`.
        public var expiredLast24h: Int
        /// Delivered records kept for export (`spool.keepDelivered`).
        public var keptDelivered: Int
    }

    public struct EndpointStatus: Sendable, Encodable {
        public var name: String
        /// The URL without credentials.
        public var url: String
        public var pending: Int
        /// Epoch milliseconds of the last delivery, if any.
        public var lastSuccessAt: Int64?
        public var lastError: String?
        /// Epoch milliseconds before which flush will not try it again (backoff, `Retry-After`).
        public var nextRetryAt: Int64?
    }

    public struct LastFixStatus: Sendable, Encodable {
        public var ageMs: Int64
        /// The fix's provider: `gpsd` or `NMEA_REPLAY`.
        public var source: String
        public var recordTimestamp: Int64
    }

    /// Gathers the report. `probe` asks gpsd (`GPSDSource.probe`) when it is the source.
    /// - Throws: `GeolocateError` when the spool or the configuration cannot be read.
    public static func gather(settings: Settings, configPath: String, environment: [String: String],
                              clock: WallClock = SystemClock(), logger: Logger,
                              probe: (_ host: String, _ port: Int) -> GPSDHealth) throws -> StatusReport {
        let now = clock.nowMilliseconds
        let stateDirectory = Paths.stateDirectory(environment: environment)
        let spool = try Spool(stateDirectory: stateDirectory, busyTimeout: 2)
        let source = try settings.resolvedSource(flag: nil, environment: environment)
        var endpoints: [EndpointStatus] = []
        for endpoint in settings.endpoints {
            let state = try spool.state(of: endpoint.name)
            endpoints.append(EndpointStatus(name: endpoint.name, url: endpoint.redactedURL, pending: try spool.pendingCount(for: endpoint.name),
                                            lastSuccessAt: state.lastSuccessAt, lastError: state.lastError,
                                            nextRetryAt: state.retryAt.flatMap { $0 > now ? $0 : nil }))
        }
        let oldest = try spool.oldestRecordedAt()
        let fix = LastKnownStore(stateDirectory: stateDirectory, kind: .live, logger: logger).load(now: now)
        var gpsd: GPSDHealth?
        if case .gpsd(let host, let port) = source { gpsd = probe(host, port) }
        return StatusReport(
            stateDirectory: stateDirectory, configPath: configPath, source: source.description,
            spool: SpoolStatus(pending: try spool.count(), oldestPendingAgeMs: oldest.map { max(0, now - $0) },
                               deadLetters: try spool.deadLetters().count, expired: try spool.expiredCount(),
                               expiredLast24h: try spool.recentlyExpiredCount(now: now),
                               keptDelivered: try spool.keptDeliveredCount()),
            endpoints: endpoints,
            lastFix: fix.map { LastFixStatus(ageMs: FixAge.of($0, at: now, boot: clock.boot) ?? 0, source: $0.provider.rawValue, recordTimestamp: $0.timestamp) },
            gpsd: gpsd, geocoderCacheEntries: GeocoderCache(stateDirectory: stateDirectory).entryCount())
    }

    /// Past this age the oldest pending record or the last fix is a WARNING.
    public static let warningAgeMs: Int64 = 3_600_000
    /// Past this age it is CRITICAL.
    public static let criticalAgeMs: Int64 = 86_400_000

    /// The monitoring-plugins verdict: exit 0 OK, 1 WARNING, 2 CRITICAL, and one line with
    /// perfdata. The last fix is judged only when gpsd is the source: a replay has no device.
    public var check: (status: Int32, line: String) {
        var critical: [String] = [], warning: [String] = []
        func judge(_ age: Int64?, _ what: String) {
            guard let age else { return }
            if age > StatusReport.criticalAgeMs { critical.append("\(what) \(Self.ageText(age)) old") }
            else if age > StatusReport.warningAgeMs { warning.append("\(what) \(Self.ageText(age)) old") }
        }
        judge(spool.oldestPendingAgeMs, "oldest pending record")
        if spool.deadLetters > 0 { critical.append("\(spool.deadLetters) dead letter\(spool.deadLetters == 1 ? "" : "s")") }
        if spool.expiredLast24h > 0 {
            warning.append("\(spool.expiredLast24h) record\(spool.expiredLast24h == 1 ? "" : "s") expired unsent in the last 24h")
        }
        if let gpsd {
            if !gpsd.reachable { critical.append("gpsd unreachable (\(gpsd.error ?? "no answer"))") }
            if let lastFix { judge(lastFix.ageMs, "last fix") } else { warning.append("no fix recorded yet") }
        }
        let status: Int32 = critical.isEmpty ? (warning.isEmpty ? 0 : 1) : 2
        let label = ["OK", "WARNING", "CRITICAL"][Int(status)]
        var summary = critical + warning
        if summary.isEmpty {
            summary = ["\(spool.pending) pending"] + (lastFix.map { ["last fix \(Self.ageText($0.ageMs)) ago"] } ?? [])
        }
        let warn = StatusReport.warningAgeMs / 1000, crit = StatusReport.criticalAgeMs / 1000
        var perfdata = ["pending=\(spool.pending);;;0", "oldest_pending=\((spool.oldestPendingAgeMs ?? 0) / 1000)s;\(warn);\(crit);0",
                        "dead_letters=\(spool.deadLetters);;0;0", "expired=\(spool.expired)c;;;0"]
        if let lastFix { perfdata.append("last_fix_age=\(lastFix.ageMs / 1000)s;\(warn);\(crit);0") }
        return (status, "GEOLOCATE \(label) - \(summary.joined(separator: ", ")) | \(perfdata.joined(separator: " "))")
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
    public var text: String {
        var rows: [(String, String)] = [("state directory", stateDirectory), ("config", configPath), ("source", source)]
        rows.append(("pending", "\(spool.pending)" + (spool.oldestPendingAgeMs.map { " (oldest \(Self.ageText($0)) old)" } ?? "")))
        rows += [("dead letters", "\(spool.deadLetters)"), ("expired", "\(spool.expired) (\(spool.expiredLast24h) in the last 24h)"),
                 ("kept delivered", "\(spool.keptDelivered)")]
        for endpoint in endpoints {
            var parts = ["\(endpoint.pending) pending", "last success " + (endpoint.lastSuccessAt.map(TimeText.iso8601) ?? "never")]
            if let error = endpoint.lastError { parts.append("last error: \(error)") }
            if let retry = endpoint.nextRetryAt { parts.append("next try after \(TimeText.iso8601(retry))") }
            rows.append(("endpoint \(endpoint.name)", "\(endpoint.url): " + parts.joined(separator: ", ")))
        }
        rows.append(("last fix", lastFix.map { "\(Self.ageText($0.ageMs)) ago from \($0.source) (\(TimeText.iso8601($0.recordTimestamp)))" } ?? "none"))
        if let gpsd {
            rows.append(("gpsd", gpsd.reachable
                ? "reachable" + (gpsd.device.map { ", device \($0)" } ?? "") + ", fix " + (gpsd.fixMode ?? "none")
                : "unreachable: \(gpsd.error ?? "no answer")"))
        }
        rows.append(("geocoder cache", geocoderCacheEntries.map { "\($0) entries" } ?? "none"))
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0 + ":" + String(repeating: " ", count: width - $0.0.count + 1) + $0.1 }.joined(separator: "\n")
    }

    /// The report as one JSON object.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

/// gpsd as `status` found it: whether it answered `?POLL;` within 1 s, its device, its fix.
public struct GPSDHealth: Sendable, Encodable {
    public var reachable: Bool
    public var device: String?
    /// `2D`, `3D`, or `nil` with no fix.
    public var fixMode: String?
    public var error: String?

    public init(reachable: Bool, device: String? = nil, fixMode: String? = nil, error: String? = nil) {
        self.reachable = reachable
        self.device = device
        self.fixMode = fixMode
        self.error = error
    }
}

extension Spool {
    /// When the oldest record still in the spool was recorded (epoch ms), or `nil` when empty.
    func oldestRecordedAt() throws -> Int64? {
        try read { try Int64.fetchOne($0, sql: "SELECT MIN(recordedAt) FROM records") }
    }

    /// How many delivered records are kept for export.
    func keptDeliveredCount() throws -> Int {
        try read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM delivered") ?? 0 }
    }
}

extension GeocoderCache {
    /// How many answers the cache holds; `nil` when there is no cache (or it cannot be read).
    func entryCount() -> Int? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        var configuration = Configuration()
        configuration.readonly = true
        guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return nil }
        return try? queue.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM cells") }
    }
}
