import Foundation
import GRDB
import GeolocateConfig
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

/// What a monitor may read of a state directory (`status.json`, SPEC §16): the spool's counts
/// and ages, each endpoint's last success and error, and how old the last fix was; never a
/// coordinate or a subject.
///
/// The spool and last-known files stay 0600, so a monitoring user in the directory's group
/// reads this instead; it takes no lock, so no reader can stall a writer or the gate.
package struct StatusSummary: Codable, Sendable, Equatable {
    /// When it was written, epoch ms: ages below are as of then.
    package var writtenAt: Int64
    /// The device id tokens carry (`iss`), which the monitor cannot read from `device-id`.
    package var iss: String?
    package var spool: Counts
    package var endpoints: [EndpointSummary]
    /// The last fix's age when written, and its provider (`gpsd`, `NMEA_REPLAY`).
    package var lastFixAgeMs: Int64?
    package var lastFixSource: String?

    /// The spool's counts, as `status` shows them.
    package struct Counts: Codable, Sendable, Equatable {
        /// Records waiting for at least one endpoint.
        package var pending: Int
        /// When the oldest of them was recorded, epoch ms.
        package var oldestPendingRecordedAt: Int64?
        package var deadLetters: Int
        /// Records expired unsent, ever, and in the 24 h before `writtenAt`.
        package var expired: Int
        package var expiredLast24h: Int
        /// Delivered records kept for export.
        package var keptDelivered: Int

        package init(pending: Int = 0, oldestPendingRecordedAt: Int64? = nil, deadLetters: Int = 0, expired: Int = 0,
                     expiredLast24h: Int = 0, keptDelivered: Int = 0) {
            self.pending = pending
            self.oldestPendingRecordedAt = oldestPendingRecordedAt
            self.deadLetters = deadLetters
            self.expired = expired
            self.expiredLast24h = expiredLast24h
            self.keptDelivered = keptDelivered
        }
    }

    /// One endpoint's share of the spool.
    package struct EndpointSummary: Codable, Sendable, Equatable {
        package var name: String
        package var pending: Int
        package var lastSuccessAt: Int64?
        package var lastError: String?
        package var lastErrorKind: EndpointErrorKind?
        /// Epoch ms before which flush will not try it again.
        package var nextRetryAt: Int64?
    }

    /// The file's name in the state directory.
    package static let fileName = StateFile.statusSummary.rawValue
    /// The largest summary read: a few hundred endpoints with long errors.
    package static let maximumBytes = 1024 * 1024

    /// The counts of `spool` as of `now`, and each of `endpoints`' share of it.
    package static func counts(of spool: Spool, endpoints: [Endpoint], now: Int64) throws -> (Counts, [EndpointSummary]) {
        let counts = Counts(pending: try spool.count(), oldestPendingRecordedAt: try spool.oldestRecordedAt(),
                            deadLetters: try spool.deadLetterCount(), expired: try spool.expiredCount(),
                            expiredLast24h: try spool.recentlyExpiredCount(now: now), keptDelivered: try spool.keptDeliveredCount())
        let shares = try endpoints.map { endpoint in
            let state = try spool.state(of: endpoint.name)
            return EndpointSummary(name: endpoint.name, pending: try spool.pendingCount(for: endpoint.name, actions: endpoint.actions),
                                   lastSuccessAt: state.lastSuccessAt, lastError: state.lastError,
                                   lastErrorKind: state.lastError == nil ? nil : state.lastErrorKind,
                                   nextRetryAt: state.retryAt.flatMap { $0 > now ? $0 : nil })
        }
        return (counts, shares)
    }

    /// The summary in `stateDirectory`, `nil` when there is none or it cannot be read or
    /// decoded (status then says the spool is unreadable, as it is to this user).
    /// Opened as every state file is (no link followed, no FIFO waited on).
    package static func read(stateDirectory: String) -> StatusSummary? {
        guard let (directory, name) = try? OpenDirectory.parent(of: StateFile.statusSummary.path(in: stateDirectory), create: false),
              let data = try? directory.read(name, limit: maximumBytes),
              let summary = try? JSONDecoder().decode(StatusSummary.self, from: data) else { return nil }
        // Counts, times and ages below zero, or a device id that is no UUID, are no summary
        // geolocate wrote: the file is the service user's.
        let counts = [summary.spool.pending, summary.spool.deadLetters, summary.spool.expired, summary.spool.expiredLast24h,
                      summary.spool.keptDelivered] + summary.endpoints.map(\.pending)
        let times: [Int64] = [summary.writtenAt, summary.spool.oldestPendingRecordedAt ?? 0, summary.lastFixAgeMs ?? 0]
            + summary.endpoints.flatMap { endpoint -> [Int64] in [endpoint.lastSuccessAt ?? 0, endpoint.nextRetryAt ?? 0] }
        guard counts.allSatisfy({ $0 >= 0 }), times.allSatisfy({ $0 >= 0 }), summary.iss.map({ UUID(uuidString: $0) != nil }) ?? true else { return nil }
        // Its text reaches a terminal and a monitoring line: nothing in it may drive or split them.
        var shown = summary
        for index in shown.endpoints.indices {
            shown.endpoints[index].name = plain(shown.endpoints[index].name)
            shown.endpoints[index].lastError = shown.endpoints[index].lastError.map(plain)
        }
        shown.lastFixSource = shown.lastFixSource.map(plain)
        return shown
    }

    /// `text` with every character `PlainText` refuses (controls, bidirectional overrides) as `?`.
    private static func plain(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { PlainText.isPlain(String($0)) ? $0 : "?" }))
    }
}

extension Spool {
    /// When the oldest record still in the spool was recorded (epoch ms), or `nil` when empty.
    package func oldestRecordedAt() throws -> Int64? {
        try read { try Int64.fetchOne($0, sql: "SELECT MIN(recordedAt) FROM records") }
    }

    /// How many delivered records are kept for export.
    package func keptDeliveredCount() throws -> Int {
        try read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM delivered") ?? 0 }
    }

    /// How many records endpoints refused.
    package func deadLetterCount() throws -> Int {
        try read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM deadLetters") ?? 0 }
    }
}
