import Foundation
import GRDB
import GeolocateConfig
import GeolocateModel
import Logging

/// Group commit for a stream of records: a record is committed at once when the last commit is
/// more than `window` ago, else with the next commit, which `tick` makes no later than `window`
/// after the previous one. A burst becomes one transaction per window; a SIGKILL loses at most
/// the records of the last window.
///
/// Every `now` it is given is the wall clock, never a replay's time: it is when the records
/// are spooled, and what their retention counts from.
///
/// While another process holds the spool locked, records wait in memory and each window tries
/// again; the spool is opened the same way, on the first commit that finds it free.
package final class SpoolWriter {
    package let limits: SpoolLimits
    private let window: Duration
    private let elapsed: MonotonicClock
    private let open: () throws -> Spool
    /// The spool, once opened: its connection is the one this process reads it through too.
    package private(set) var spool: Spool?
    private var pending: [SpoolEntry] = []
    /// When a commit was last tried, on `elapsed`.
    private var lastAttempt: Double?
    private let logger: Logger?
    private var lockedSince: Double?
    /// Records committed, and records the limits expired, by this writer.
    package private(set) var committed = 0
    package private(set) var expired = 0

    /// - Parameter open: opens the spool; called at once, and again after it was found locked.
    /// - Throws: what `open` throws, other than `.spoolLocked`.
    package convenience init(limits: SpoolLimits, window: Duration = SpoolWriter.defaultWindow,
                             elapsed: MonotonicClock, logger: Logger? = nil,
                             open: @escaping () throws -> Spool) throws {
        self.init(spool: nil, limits: limits, window: window, elapsed: elapsed, logger: logger, open: open)
        do { spool = try open() } catch let error as GeolocateError where error.isSpoolLocked { noteLocked(error.path ?? "") }
    }

    /// A writer to `spool`, already open.
    package convenience init(spool: Spool, limits: SpoolLimits, window: Duration = SpoolWriter.defaultWindow,
                             elapsed: MonotonicClock) {
        self.init(spool: spool, limits: limits, window: window, elapsed: elapsed, logger: nil, open: { spool })
    }

    private init(spool: Spool?, limits: SpoolLimits, window: Duration, elapsed: MonotonicClock, logger: Logger?,
                 open: @escaping () throws -> Spool) {
        self.spool = spool
        self.limits = limits
        self.window = window
        self.elapsed = elapsed
        self.logger = logger
        self.open = open
    }

    /// How long records wait to be committed together: a SIGKILL loses at most this much.
    package static let defaultWindow = Duration.milliseconds(200)

    /// The most records kept in memory before a commit, whatever the window: a fast replay
    /// makes tens of thousands a window, and holding them all was a third of track's memory.
    package static let largestBatch = 1000

    package func add(_ entry: SpoolEntry, now: Int64) throws {
        pending.append(entry)
        try tick(now: now)
    }

    /// Commits what is pending if the window since the last attempt has passed.
    /// - Throws: `GeolocateError.stateNotWritable` (73); a lock only delays the commit.
    package func tick(now: Int64) throws {
        guard !pending.isEmpty else { return }
        if let lastAttempt, elapsed.milliseconds(since: lastAttempt) < window.milliseconds, pending.count < SpoolWriter.largestBatch { return }
        do {
            try commit(now: now)
        } catch let error as GeolocateError where error.isSpoolLocked {
            noteLocked(error.path ?? "")
        }
    }

    /// Commits everything pending now.
    /// - Throws: `GeolocateError.stateNotWritable` (73), or `.spoolLocked` (75) while another
    ///   process holds the spool.
    package func flush(now: Int64) throws {
        guard !pending.isEmpty else { return }
        try commit(now: now)
    }

    /// Commits everything pending, trying again while the spool is locked until `giveUp`
    /// says to stop trying.
    /// - Throws: `GeolocateError.stateNotWritable` (73), or `.uncommitted` (73) naming how
    ///   many records could not be committed when it gave up on a lock.
    package func finish(now: Int64, giveUp: () -> Bool) throws {
        while !pending.isEmpty {
            do {
                try commit(now: now)
            } catch let error as GeolocateError where error.isSpoolLocked {
                let path = error.path ?? ""
                noteLocked(path)
                guard !giveUp() else {
                    throw GeolocateError.uncommitted(path: path, count: pending.count)
                }
                elapsed.sleep(for: .milliseconds(50))
            }
        }
    }

    /// Commits what is pending in one transaction or, when the spool cannot take it all (a
    /// full file system), in ever smaller ones, in order, as far as they fit.
    /// - Throws: `GeolocateError.stateNotWritable` (73) saying how many records of this
    ///   writer were committed and how many were not, when one record no longer fits.
    private func commit(now: Int64) throws {
        lastAttempt = elapsed.nowSeconds
        let spool = try self.spool ?? open()
        self.spool = spool
        var kept = 0
        var size = pending.count
        var expiredNow = 0
        while kept < pending.count {
            let batch = Array(pending[kept..<min(pending.count, kept + size)])
            do {
                expiredNow += try spool.append(batch, now: now, limits: limits)
                kept += batch.count
            } catch let error as GeolocateError where error.isStateNotWritable {
                let (path, reason) = (error.path ?? "", error.reason ?? error.description)
                guard size > 1 else {
                    pending.removeFirst(kept)
                    committed += kept
                    throw GeolocateError.stateNotWritable(
                        path: path, reason: "\(reason); \(committed) record\(committed == 1 ? "" : "s") of this run were committed, in order, and the \(pending.count) after them were not")
                }
                size = (size + 1) / 2
            }
        }
        if expiredNow > 0 { logger?.warning("\(limits.expiryWarning(count: expiredNow))") }
        expired += expiredNow
        committed += pending.count
        pending.removeAll(keepingCapacity: true)
        if let lockedSince {
            logger?.notice("\(spool.path) is free again after \(elapsed.milliseconds(since: lockedSince)) ms; records committed")
            self.lockedSince = nil
        }
    }

    private func noteLocked(_ path: String) {
        lastAttempt = elapsed.nowSeconds
        guard lockedSince == nil else { return }
        lockedSince = elapsed.nowSeconds
        logger?.warning("\(path) is locked by another process; records are kept in memory and committed when it is free")
    }
}
