import Foundation
import GRDB
import GeolocateConfig
import GeolocateModel
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Keeps `status.json` of a state directory that a command writes: at most once a second
/// while it runs (`refresh`), and at its end (`refresh(force: true)`).
///
/// Written 0640 in the directory's group, atomically (a reader sees the old file or the new
/// one); a failure is one warning, never the command's failure.
package final class StatusSummaryWriter: Sendable {
    private let stateDirectory: String
    private let endpoints: [Endpoint]
    private let clock: WallClock
    private let elapsed: MonotonicClock
    private let logger: Logger
    /// When it was last written (elapsed seconds), and whether a failure was said.
    private let state = Mutex<(lastWritten: Double?, warned: Bool)>((nil, false))

    package init(_ context: CommandContext) {
        stateDirectory = context.stateDirectory
        endpoints = context.settings.endpoints
        clock = context.clock
        elapsed = context.elapsed
        logger = context.logger
    }

    /// Rewrites the summary, unless it was written less than a second ago and `force` is false.
    ///
    /// `spool` is the connection this process writes the spool through, if it has one: the
    /// counts are read through it, never through a second connection, whose close would drop
    /// the locks SQLite holds for the first (POSIX locks are the process's).
    package func refresh(force: Bool = false, through spool: Spool? = nil) {
        let now = elapsed.nowSeconds
        let due = state.withLock { state in
            if !force, let last = state.lastWritten, now - last < 1 { return false }
            state.lastWritten = now
            return true
        }
        guard due else { return }
        do {
            try write(through: spool)
        } catch {
            guard state.withLock({ state in defer { state.warned = true }; return !state.warned }) else { return }
            logger.warning("\(StateFile.statusSummary.path(in: stateDirectory)) was not updated, so status shows monitoring users older counts: \(ErrorText.plain(error))")
        }
    }

    private func write(through open: Spool?) throws {
        let now = clock.nowMilliseconds
        var (counts, shares) = (StatusSummary.Counts(), [StatusSummary.EndpointSummary]())
        if let spool = try open ?? Spool.openForReading(stateDirectory: stateDirectory, elapsed: elapsed) {
            (counts, shares) = try StatusSummary.counts(of: spool, endpoints: endpoints, now: now)
        }
        let fix = try? LastKnownStore(stateDirectory: stateDirectory, kind: .live, logger: logger).load(now: now)
        let summary = StatusSummary(writtenAt: now, iss: DeviceInfo.existingDeviceID(stateDirectory: stateDirectory), spool: counts, endpoints: shares,
                                    lastFixAgeMs: fix.flatMap { FixAge.of($0, at: now, boot: clock.boot) },
                                    lastFixSource: fix?.provider.rawValue)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let directory = try OpenDirectory.state(stateDirectory)
        // Root's file is the directory owner's (OpenDirectory adopts it); anyone else's keeps
        // its owner and takes the directory's group, which monitoring users are in.
        let owner = geteuid() == 0 ? nil : (uid: geteuid(), gid: directory.group)
        try directory.writeAtomically(try encoder.encode(summary) + Data("\n".utf8), to: StatusSummary.fileName, permissions: 0o640, owner: owner)
    }
}
