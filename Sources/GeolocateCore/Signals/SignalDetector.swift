import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import Logging
import NMEA

/// The report the next one is compared with: the last record with a location made on this
/// device, kept in the state directory.
struct PreviousReport: Codable, Sendable, Equatable {
    /// Its fix time, milliseconds since 1970.
    var recordTimestamp: Int64
    var latitude: Double
    var longitude: Double
    /// Metres, 68 %; `nil` when unknown.
    var accuracy: Double?
    /// As signals saw it: the gazetteer's code or the replacement for an inaccurate fix.
    var countryCode: String?
    /// When it was made (system time, ms), so that of two processes' reports the later wins.
    var madeAt: Int64
    /// The Wi-Fi access point the device was connected to, when known.
    var wifiBssid: String?
    /// When its fix arrived (system time, ms), for a live fix: elapsed time between live
    /// reports is measured between arrivals, as the receiver's clock may be wrong.
    var arrivedAt: Int64?
    /// The satellites its fix rested on, when the receiver named them.
    var satellites: SatelliteSet?
    /// The boot its fix arrived in and `CLOCK_BOOTTIME` then (ms): within one boot the time
    /// between reports is measured there, so a clock step neither makes nor hides a jump.
    var arrivedBoot: String?
    var arrivedUptime: Int64?

    /// Whether it was made, and its fix arrived, by `now` (a minute's grace): an anchor dated
    /// later cannot be a real past (a clock that was once ahead) and is dropped, not held
    /// against every later fix.
    func isPast(now: Int64) -> Bool {
        madeAt <= now.addingClamped(60_000) && (arrivedAt.map { $0 <= now.addingClamped(60_000) } ?? true)
    }

    /// Whether its values are ones geolocate could have written: a state file is input, and
    /// one out of range is damaged.
    var isValid: Bool {
        FixLimits.isValidPosition(latitude: latitude, longitude: longitude)
            && recordTimestamp >= FixLimits.earliestTimestamp && recordTimestamp <= TimeText.latestMilliseconds
            && (accuracy.map { $0.isFinite && $0 >= 0 } ?? true)
            && (countryCode.map { $0.utf8.count <= 8 } ?? true)
            && (satellites.map { (0...4096).contains($0.count) } ?? true)
            && (arrivedUptime.map { $0 >= 0 } ?? true)
    }
}

/// Computes each record's `signals` against the previous report, and keeps the report.
///
/// Live and replayed reports are kept apart (`previous-report.json`,
/// `previous-report-replay.json`), as last known locations are: replaying a test log must
/// never make a real login look like a jump. Every read and write of the file holds
/// `previous-report.lock`, so processes that report at once each see a whole report.
package struct SignalDetector {
    package var thresholds: SignalThresholds
    /// `privacy.countryCodeReplacement`: a code that is not a country.
    package var countryCodeReplacement: String
    /// `WallClock.isSynchronized` when the records were made: a skew counts only against a
    /// synchronised system clock.
    package var clockSynchronized: Bool?
    /// What waiting for another process's lock on the report measures and sleeps on.
    private let clock: MonotonicClock
    private let stateDirectory: String
    /// `previous-report.json`, or `previous-report-replay.json` for replayed records.
    private let fileName: String
    private let logger: Logger
    /// The report the next record is compared with.
    private var previous: PreviousReport?
    /// The report made here that the file does not hold yet.
    private var unsaved: PreviousReport?
    private var warned = false
    /// A link, FIFO or another user's file found where the report or its lock is kept
    /// (SPEC §14): the record's command ends with it (73) instead of going on without.
    package private(set) var refusal: GeolocateError?
    /// Why a stored report could not be read (damaged, unreadable, its lock held too long):
    /// under a policy nothing can be decided without it (SPEC §10.1).
    package private(set) var unreadable: String?

    /// How long a report waits for another process's lock on the file before it goes without
    /// it, where no action's deadline says (track): signals never delay a record noticeably.
    static let lockPatienceMilliseconds = 200
    /// The action's own deadline (trigger's query timeout, from the action's start): the lock
    /// is waited for until it passes, so two logins at one moment both read the report, and
    /// never past it, so the gate's bound holds (SPEC §10.1: one deadline for lock, query and
    /// decision).
    package var actionDeadline: Deadline?

    package init(settings: Settings, stateDirectory: String, replay: Bool, clockSynchronized: Bool?, clock: MonotonicClock,
                 logger: Logger) {
        thresholds = SignalThresholds(settings: settings)
        self.clockSynchronized = clockSynchronized
        self.clock = clock
        countryCodeReplacement = settings[ConfigKey.privacyCountryCodeReplacement]
        self.stateDirectory = stateDirectory
        fileName = (replay ? StateFile.previousReportReplay : StateFile.previousReport).rawValue
        self.logger = logger
    }

    /// `state forget previous` by `who`: the reports removed, each on a line of what it
    /// returns (or that there was none); a removal is written to the system log, as the gate's
    /// anchor is evidence in login decisions.
    package static func forgetPrevious(in stateDirectory: String, by who: String) throws -> String {
        let removed = try forgetPrevious(stateDirectory: stateDirectory)
        guard !removed.isEmpty else { return "no previous report in \(stateDirectory)\n" }
        SystemLog.write(.notice, "state forget previous by \(who): removed \(removed.joined(separator: ", "))")
        return removed.map { "removed \($0)\n" }.joined()
    }

    /// Removes the previous reports kept in `stateDirectory`, and root's in its `gate/`
    /// (`geolocate state forget previous`): the administrator's way to end a jump that stands
    /// (SPEC §10.1). Each is unlinked through its directory's descriptor, never followed; no
    /// lock is waited for, so a lock held for ever cannot stall it, and a report written
    /// meanwhile is a new, genuine one.
    /// - Returns: the paths removed.
    /// - Throws: `GeolocateError.stateNotWritable` when the directory cannot be opened or a
    ///   report cannot be removed; `.stateFileRefused` for a `gate/` that is not root's.
    package static func forgetPrevious(stateDirectory: String) throws -> [String] {
        let state: OpenDirectory
        do {
            guard let opened = try OpenDirectory.open(stateDirectory, create: false) else { return [] }
            state = opened
        } catch {
            throw GeolocateError.stateNotWritable(path: stateDirectory, reason: ErrorText.plain(error))
        }
        var directories = [state]
        if geteuid() == 0, state.exists(StateFile.gateDirectory) {
            directories.append(try state.privateSubdirectory(StateFile.gateDirectory))
        }
        var removed: [String] = []
        for directory in directories {
            for name in [StateFile.previousReport, StateFile.previousReportReplay].map(\.rawValue) where directory.exists(name) {
                directory.remove(name)
                guard !directory.exists(name) else {
                    throw GeolocateError.stateNotWritable(path: directory.path(of: name), reason: "it could not be removed")
                }
                removed.append(directory.path(of: name))
            }
        }
        return removed
    }

    /// Whether records get signals: `signals.enabled`.
    package static func isEnabled(_ settings: Settings) -> Bool { settings[ConfigKey.signalsEnabled] }

    /// Gives `record` its signals, compared with the last plausible report in the state
    /// directory, which it then replaces there when it is plausible itself: trigger's one record.
    package mutating func annotateAndSave(_ record: inout Record, country: String?, now: Int64, boot: BootTime? = nil) {
        guard record.fix != nil else { return }
        let access = reportAccess()
        let directory = access.directory
        defer { withExtendedLifetime(access) {} }
        if let directory { previous = load(now: now, from: directory) }
        annotate(&record, country: country, now: now, boot: boot)
        guard unsaved != nil else { return }
        if let directory, let problem = save(in: directory) {
            record.signals?.reasons.append(SignalDetector.notKeptReason(problem))
        } else if directory == nil, unreadable == nil, refusal == nil {
            record.signals?.reasons.append(SignalDetector.notKeptReason("its directory cannot be opened"))
        }
    }

    /// Gives `record` its signals, compared with the last plausible report before it (in this
    /// process, or for the first the one in the state directory): track's records, kept by
    /// `saveLatest()`.
    ///
    /// Only a plausible report becomes the one the next is compared with (SPEC §10.1): not
    /// jumped, spoofed, estimated or inaccurate, fresh (of known age, not stale), and no
    /// earlier than the one before. So retrying a login after a jump, a spoofer holding the receiver
    /// at the false place, or an old remembered fix offered as the last known location, keeps
    /// meeting the jump until the travel could have been made.
    /// - Parameter boot: this boot and its `CLOCK_BOOTTIME` now, when `now` is the system's.
    package mutating func annotate(_ record: inout Record, country: String?, now: Int64, boot: BootTime? = nil) {
        guard let fix = record.fix else { return }
        // An anchor that arrived after now in this boot cannot be a real past.
        if let anchor = previous, let boot, boot.id == anchor.arrivedBoot, let then = anchor.arrivedUptime,
           then > boot.uptimeMilliseconds.addingClamped(60_000) {
            logger.notice("ignoring the previous report: it arrived after now in this boot, so it cannot be a real past")
            previous = nil
        }
        let signals = SignalDetector.signals(of: record, fix: fix, country: country, previous: previous,
                                             thresholds: thresholds, countryCodeReplacement: countryCodeReplacement,
                                             clockSynchronized: clockSynchronized)
        record.signals = signals
        // An inaccurate report's circle, taken off the distance, would let the next fix pass
        // from anywhere it covers (one fix good to 1,300 km cleared a jump); an old one, or one
        // earlier than the anchor, would move the anchor back in time.
        guard !(signals.jumped || signals.spoofingSuspected || signals.estimatedFix || signals.inaccurate || signals.stale),
              record.ageMilliseconds != nil, previous.map({ SignalDetector.elapsed(from: $0, to: fix) >= 0 }) ?? true else { return }
        let report = PreviousReport(recordTimestamp: fix.timestamp, latitude: fix.latitude, longitude: fix.longitude,
                                    accuracy: fix.horizontalAccuracy, countryCode: country, madeAt: now,
                                    wifiBssid: record.device?.context.wifiBssid, arrivedAt: fix.receivedAt,
                                    satellites: fix.satellites?.tracked, arrivedBoot: fix.receivedBoot,
                                    arrivedUptime: fix.receivedUptime)
        previous = report
        unsaved = report
    }

    /// Loads the stored report to compare the first record with.
    package mutating func loadPrevious(now: Int64) {
        let access = reportAccess()
        defer { withExtendedLifetime(access) {} }
        if let directory = access.directory { previous = load(now: now, from: directory) }
    }

    /// Writes the last plausible report made here, unless another process has written a
    /// later one since, which the next record is then compared with.
    package mutating func saveLatest() {
        guard let unsaved else { return }
        let access = reportAccess()
        defer { withExtendedLifetime(access) {} }
        guard case .locked(_, let directory) = access else {
            if case .unlocked(let directory) = access { _ = save(in: directory) }
            return
        }
        if let stored = load(now: unsaved.madeAt, from: directory), stored.madeAt > unsaved.madeAt {
            previous = stored
            self.unsaved = nil
        } else {
            _ = save(in: directory)
        }
    }

    /// The reason a record carries when its report could not be kept (SPEC §10.1).
    static func notKeptReason(_ problem: String) -> String {
        "previousNotKept: this report could not be kept (\(problem)); the next one is compared with the report before it, which no longer constrains once its travel time has passed"
    }

    /// Keeps `unsaved` in `directory`; returns why it could not, said once on stderr.
    private mutating func save(in directory: OpenDirectory) -> String? {
        guard let unsaved else { return nil }
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            try directory.writeAtomically(try encoder.encode(unsaved), to: fileName, permissions: 0o600)
            self.unsaved = nil
            return nil
        } catch {
            let problem = "\(directory.path(of: fileName)): \(ErrorText.plain(error))"
            warnOnce("the previous report cannot be kept in \(problem); the next report is compared with the one kept before, which no longer constrains once its travel time has passed")
            return problem
        }
    }

    /// The stored report; `nil` when there is none, or it was made more than a minute after
    /// `now` or arrived after it (a clock that was once ahead must not pin it). One that exists
    /// and cannot be read (damaged, larger than 64 KiB, unreadable) sets `unreadable`.
    private mutating func load(now: Int64, from directory: OpenDirectory) -> PreviousReport? {
        let path = directory.path(of: fileName)
        let data: Data
        do {
            guard let contents = try directory.read(fileName, limit: 64 * 1024) else { return nil }
            data = contents
        } catch let error as GeolocateError where error.isRefusedStateFile {
            refusal = error
            return nil
        } catch {
            noteUnreadable("\(path) cannot be read (\(ErrorText.plain(error)))")
            return nil
        }
        guard let report = try? JSONDecoder().decode(PreviousReport.self, from: data) else {
            noteUnreadable("\(path) is damaged (not a previous report)")
            return nil
        }
        guard report.isValid else {
            noteUnreadable("\(path) is damaged (values out of range)")
            return nil
        }
        guard report.isPast(now: now) else {
            logger.notice("ignoring the previous report in \(path): it was made after this record's time (a replay of an older log, or a clock set back)")
            return nil
        }
        return report
    }

    /// Says that a stored report exists and cannot be read: under a policy the decision is
    /// then undetermined (the pipeline reads `unreadable`), otherwise signals go without it.
    private mutating func noteUnreadable(_ why: String) {
        unreadable = why
        // Named with its file: under a policy the decision's line says only that it cannot be read.
        warnOnce("\(why); signals go without the stored previous report")
    }

    /// The directory that keeps the report: the state directory, or for root in a state
    /// directory of another user's (the service user's `/var/lib/geolocate`) its root-only
    /// `gate/`, where that user can neither plant nor change anything (SPEC §14); `nil` when
    /// it does not exist and cannot be made (a read-only file system), so holds no report.
    private func reportDirectory() throws -> OpenDirectory? {
        let directory: OpenDirectory
        do {
            directory = try OpenDirectory.state(stateDirectory)
        } catch let error as GeolocateError where !FileManager.default.fileExists(atPath: stateDirectory) {
            logger.debug("\(error)")
            return nil
        }
        guard geteuid() == 0, directory.owner != 0 else { return directory }
        do {
            return try directory.privateSubdirectory(StateFile.gateDirectory)
        } catch let error as GeolocateError where !error.isRefusedStateFile && !directory.exists(StateFile.gateDirectory) {
            logger.debug("\(error)")
            return nil
        }
    }

    /// How the report may be read and written.
    private enum ReportAccess {
        /// Under its lock: read, compared and written by one process at a time.
        case locked(FileLock, OpenDirectory)
        /// Without a lock, which cannot be made (a read-only or full file system): the report
        /// is still read whole, as every write of it is a rename.
        case unlocked(OpenDirectory)
        /// No report: none can be there, or something planted (`refusal`) or another process's
        /// lock (`unreadable`) is in the way.
        case none

        /// Where the report is, when it may be read.
        var directory: OpenDirectory? {
            switch self {
            case .locked(_, let directory), .unlocked(let directory): directory
            case .none: nil
            }
        }
    }

    /// The report's directory and, when it can be had within the action's deadline, its
    /// lock. A lock held by another process for longer leaves the report unread
    /// (`unreadable`); a lock file that cannot be made leaves it unlocked; something planted
    /// sets `refusal`.
    private mutating func reportAccess() -> ReportAccess {
        let deadline = actionDeadline ?? Deadline(milliseconds: SignalDetector.lockPatienceMilliseconds, clock: clock)
        let lockName = StateFile.previousReportLock.rawValue
        do {
            // Opened once: each try for the lock opens only the lock file.
            guard let directory = try reportDirectory() else { return .none }
            while true {
                let lock: FileLock?
                do {
                    lock = try FileLock.ifFree(lockName, in: directory)
                } catch let error as GeolocateError where !error.isRefusedStateFile && !directory.exists(lockName) {
                    logger.debug("\(error); the previous report is read without its lock")
                    return .unlocked(directory)
                }
                if let lock { return .locked(lock, directory) }
                guard !deadline.hasPassed else {
                    noteUnreadable("\(directory.path(of: lockName)) is held by another process")
                    return .none
                }
                clock.sleep(for: .milliseconds(5))
            }
        } catch let error as GeolocateError where error.isRefusedStateFile {
            refusal = error
            return .none
        } catch {
            noteUnreadable("\(ErrorText.plain(error))")
            return .none
        }
    }

    private mutating func warnOnce(_ message: String) {
        if !warned { logger.warning("\(message)") }
        warned = true
    }

    /// The signals of `record` (whose location is `fix`) against `previous`.
    static func signals(of record: Record, fix: Fix, country: String?, previous: PreviousReport?,
                        thresholds t: SignalThresholds, countryCodeReplacement: String, clockSynchronized: Bool?) -> Signals {
        var signals = Signals()
        var reasons: [String] = []
        if let previous {
            let distance = Geodesy.distance(latitude1: previous.latitude, longitude1: previous.longitude,
                                            latitude2: fix.latitude, longitude2: fix.longitude)
            let elapsed = SignalDetector.elapsed(from: previous, to: fix)
            signals.previous = .init(recordTimestamp: previous.recordTimestamp, distance: distance, countryCode: previous.countryCode)
            let seconds = Double(elapsed) / 1000
            if elapsed > 0 { signals.impliedSpeed = distance / seconds }
            // Both circles of uncertainty are taken off: noise alone never jumps. An anchor is
            // never inaccurate, so a stored circle wider than the limit is not believed.
            let excess = distance - min(previous.accuracy ?? t.maxAccuracy, t.maxAccuracy) - (fix.horizontalAccuracy ?? t.maxAccuracy)
            signals.jumped = excess > 0 && (elapsed <= 0 || excess / seconds > t.maxSpeed)
            if signals.jumped {
                let travel = signals.impliedSpeed.map { "in \(SignalText.duration(elapsed)) needs \(SignalText.figure($0)) m/s" }
                    ?? (elapsed < 0 ? "while the time went back \(SignalText.duration(Int64(clamping: elapsed.magnitude)))"
                        : "with no time between the reports")
                reasons.append("jumped: \(SignalText.distance(distance)) \(travel) (limit \(SignalText.figure(t.maxSpeed)) m/s)")
                // Travel that far changes the sky; a position moved under the same satellites
                // was moved by the signals, not by the device. Time going back (a replayed log
                // played again) passes the same sky again: no evidence.
                if elapsed > 0, let now = fix.satellites?.tracked, now == previous.satellites,
                   now.count >= SignalThresholds.minSatellitesForJump {
                    signals.spoofingSuspected = true
                    reasons.append("spoofingSuspected: the position jumped while the same \(now.count) satellites were tracked")
                }
            }
            func isCountry(_ code: String?) -> Bool {
                guard let code else { return false }
                return code != countryCodeReplacement && code.utf8.count == 2
            }
            if isCountry(country), isCountry(previous.countryCode), let country, let before = previous.countryCode,
               country != before, elapsed.magnitude <= UInt64(t.countryWindowMilliseconds) {
                signals.countryChanged = true
                reasons.append("countryChanged: \(before) -> \(country) within \(SignalText.duration(t.countryWindowMilliseconds))")
            }
            // A new access point within a minute while the fix stays put (the circles of both
            // fixes overlap): a relayed or spoofed Wi-Fi, or a fix that is not where the device is.
            if let before = previous.wifiBssid, let now = record.device?.context.wifiBssid, before != now,
               elapsed.magnitude <= UInt64(SignalThresholds.wifiChangeWindowMilliseconds), excess <= 0 {
                reasons.append("wifiChanged: the access point changed from \(before) to \(now) within \(SignalText.duration(max(elapsed, 0))) while the fix stayed put")
            }
        }
        if let age = record.ageMilliseconds, age > t.staleAfterMilliseconds {
            signals.stale = true
            reasons.append("stale: the fix is \(SignalText.duration(age)) old (limit \(SignalText.duration(t.staleAfterMilliseconds)))")
        }
        if let accuracy = fix.horizontalAccuracy {
            if accuracy > t.maxAccuracy {
                signals.inaccurate = true
                reasons.append("inaccurate: accuracy \(SignalText.figure(accuracy)) m (limit \(SignalText.figure(t.maxAccuracy)) m)")
            }
        } else {
            signals.inaccurate = true
            reasons.append("inaccurate: the accuracy is unknown")
        }
        if fix.isReplayed {
            signals.replayed = true
            reasons.append("replayed: the fix comes from an NMEA replay")
        } else if fix.receivedAt != nil, let skew = fix.clockSkewMilliseconds {
            signals.clockSkewMilliseconds = skew
            signals.systemClockSynchronized = clockSynchronized
            if skew.magnitude > UInt64(t.maxClockSkewMilliseconds), clockSynchronized == true {
                signals.clockSkewed = true
                let side = skew < 0 ? "ahead of" : "behind"
                reasons.append("clockSkewed: the fix's time was \(SignalText.duration(Int64(clamping: skew.magnitude))) \(side) the synchronised system clock when it arrived (limit \(SignalText.duration(t.maxClockSkewMilliseconds)))")
            }
        }
        if let quality = fix.quality, !quality.isMeasured {
            signals.estimatedFix = true
            reasons.append("estimatedFix: \(SignalDetector.unmeasuredText(quality))")
        }
        signals.satellites = fix.satellites
        if let satellites = fix.satellites {
            if satellites.measured >= SignalThresholds.minSatellitesForSpread, let spread = satellites.cn0StdDev, spread < t.minCn0StdDev {
                signals.spoofingSuspected = true
                reasons.append("spoofingSuspected: \(satellites.measured) satellites' C/N0 spread by \(SignalText.figure(spread)) dB-Hz only (limit \(SignalText.figure(t.minCn0StdDev)))")
            } else if let mean = satellites.cn0Mean, mean > SignalThresholds.maxCn0Mean {
                signals.spoofingSuspected = true
                reasons.append("spoofingSuspected: mean C/N0 \(SignalText.figure(mean)) dB-Hz, stronger than open sky (limit \(SignalText.figure(SignalThresholds.maxCn0Mean)))")
            }
        }
        signals.jamming = fix.jamming
        if let jamming = fix.jamming, jamming > t.maxJamming {
            signals.jammed = true
            reasons.append("jammed: the receiver's jamming indicator is \(jamming) of 255 (limit \(t.maxJamming))")
        }
        signals.antenna = fix.antenna
        signals.antennaPower = fix.antennaPower
        if let antenna = fix.antenna, antenna != .ok {
            signals.antennaFault = true
            reasons.append("antennaFault: the receiver reports its antenna \(antenna == .open ? "open (disconnected)" : "shorted")")
        }
        if let verdict = fix.receiverVerdict {
            signals.gnssAuthenticated = verdict.gnssAuthenticated
            signals.receiverSpoofing = verdict.spoofing
            signals.receiverJamming = verdict.jamming
            signals.osnmaReplay = verdict.osnmaReplay
            signals.osnmaStatus = verdict.osnmaStatus
            signals.authenticatedSatellites = verdict.authenticatedSatellites
            if verdict.spoofing == true {
                let said = [verdict.spoofingState.flatMap { $0 >= 2 ? "SEC-SIG spoofing \($0 == 3 ? "affirmed" : "indicated")" : nil },
                            verdict.spoofDetectionState.flatMap { $0 >= 2 ? "NAV-STATUS spoofDetState \($0)" : nil }]
                reasons.append("receiverSpoofing: the receiver reports spoofing (\(said.compactMap { $0 }.joined(separator: ", ")))")
            }
            if verdict.jamming == true {
                reasons.append("receiverJamming: the receiver reports critical jamming (SEC-SIG)")
            }
            if verdict.osnmaReplay == true {
                reasons.append("osnmaReplay: Galileo OSNMA's time synchronisation status is 4, a replayed navigation message (SEC-OSNMA)")
            }
        }
        // A live receiver that says it simulates (mode letter S, GGA quality 8, gpsd status 8)
        // is a simulator's output reaching the device; a replayed simulator log is a test.
        if fix.quality == .simulator, !fix.isReplayed {
            signals.spoofingSuspected = true
            reasons.append("spoofingSuspected: the receiver reports simulator output on a live source")
        }
        signals.reasons = reasons
        return signals
    }

    /// Milliseconds from `previous` to `fix`: on `CLOCK_BOOTTIME` when both arrived in this
    /// boot, else between arrivals (live) or fix times (replay).
    static func elapsed(from previous: PreviousReport, to fix: Fix) -> Int64 {
        if let boot = fix.receivedBoot, boot == previous.arrivedBoot, let now = fix.receivedUptime, let then = previous.arrivedUptime {
            return now.subtractingClamped(then)
        }
        return fix.arrivalOrTime.subtractingClamped(previous.arrivedAt ?? previous.recordTimestamp)
    }

    /// The `estimatedFix` reason's words for a fix the receiver did not measure.
    static func unmeasuredText(_ quality: Fix.Quality) -> String {
        switch quality {
        case .manual: "the receiver was given the position (manual input) instead of measuring it"
        case .simulator: "the receiver reports simulator output, not a measured position"
        default: "the receiver estimated the fix (dead reckoning) instead of measuring it"
        }
    }
}
