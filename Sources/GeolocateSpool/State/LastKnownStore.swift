import Foundation
import GeolocateModel
import Logging
import NMEA

/// The last fix geolocate itself saw, kept in the state directory across commands.
///
/// Live fixes and replayed ones are kept apart (`last-known.json`, `last-known-replay.json`):
/// a test log must never answer a real login, and a replay falls back only to replays.
/// Only a fresher fix replaces the stored one (a later arrival for live fixes, a later time
/// for replayed ones), so replaying an old log never makes the last known location older;
/// but a stored fix that arrived after "now" (the clock was set back), or a replayed one
/// dated more than `FixLimits.maxFutureSkewMilliseconds` after it, is replaced by any fix,
/// so one bad clock cannot wedge the store.
package struct LastKnownStore {
    /// Which fixes a store keeps.
    package enum Kind: Sendable {
        /// Fixes from gpsd, judged against the system clock.
        case live
        /// Fixes from NMEA replays, judged against the replay's own (virtual) clock.
        case replay
    }

    package let path: String
    package let kind: Kind
    private let logger: Logger

    package init(stateDirectory: String, kind: Kind = .live, logger: Logger) {
        path = (kind == .live ? StateFile.lastKnown : StateFile.lastKnownReplay).path(in: stateDirectory)
        self.kind = kind
        self.logger = logger
    }

    /// The stored fix as of `now`; `nil` when there is none, when it is of the other kind
    /// (a replayed fix left in `last-known.json` by an earlier version), when it is dated
    /// before the GPS epoch, when a replayed one is dated implausibly far after `now`, or when
    /// the file cannot be decoded (with a warning). A live fix's age is `FixAge`'s to judge.
    /// - Throws: `GeolocateError.stateFileRefused` (73) when a link, a FIFO or another user's
    ///   file is in its place: a planted file is refused, not read (SPEC §14).
    package func load(now: Int64) throws -> Fix? {
        guard let fix = try stored(), isOfThisKind(fix), fix.timestamp >= FixLimits.earliestTimestamp else { return nil }
        if fix.receivedAt == nil, fix.timestamp > now.addingClamped(FixLimits.maxFutureSkewMilliseconds) { return nil }
        return fix
    }

    /// Stores `fix` if it is fresher than the usable stored one as of `now`.
    /// - Throws: `GeolocateError.stateNotWritable` (73).
    package func update(with fix: Fix, now: Int64) throws {
        guard isOfThisKind(fix) else { return }
        if let stored = try load(now: now), stored.receivedAt.map({ $0 <= now }) ?? true,
           stored.arrivalOrTime >= fix.arrivalOrTime { return }
        try AtomicFile.writeState(fix, to: path)
    }

    /// Whether `fix` belongs here: a live fix (from gpsd, or a receiver on a terminal, dated
    /// by its arrival) or a replayed one (NMEA on the log's clock).
    private func isOfThisKind(_ fix: Fix) -> Bool {
        fix.isReplayed == (kind == .replay)
    }

    private func stored() throws -> Fix? {
        let data: Data
        do {
            guard let (directory, name) = try OpenDirectory.parent(of: path, create: false),
                  let contents = try directory.read(name, limit: 64 * 1024) else { return nil }
            data = contents
        } catch let error as GeolocateError {
            if error.isRefusedStateFile { throw error }
            data = Data()
        } catch {
            // The directory cannot be opened: nothing stored that can be read.
            return nil
        }
        guard let fix = LastKnownStore.fix(decoding: data) else {
            logger.warning("ignoring unreadable last known location in \(path)")
            return nil
        }
        return fix
    }

    /// The fix a last-known file holds, or `nil` when it is not one. Values out of range are
    /// unreadable too: a state file is input like any other (SPEC §8).
    package static func fix(decoding data: Data) -> Fix? {
        guard let fix = try? JSONDecoder().decode(Fix.self, from: data) else { return nil }
        return Fix.checked(fix)
    }
}

