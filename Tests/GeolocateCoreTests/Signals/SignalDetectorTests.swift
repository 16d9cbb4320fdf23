import Foundation
@testable import GeolocateConfig
@testable import GeolocateCore
@testable import GeolocateDelivery
@testable import GeolocateModel
@testable import GeolocateSpool
import Logging
import Synchronization
import Testing
import NMEA

/// The rules of SPEC §10.1, one by one, on records made by hand.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct SignalDetectorTests {
    let thresholds = SignalThresholds()
    let start: Int64 = 1_795_248_000_000

    func fix(_ latitude: Double, _ longitude: Double, at timestamp: Int64, accuracy: Double? = 5, provider: Fix.Provider = .gpsd,
             receivedAt: Int64? = nil, satellites: SatelliteSummary? = nil) -> Fix {
        var fix = Fix(timestamp: timestamp, latitude: latitude, longitude: longitude, mode: .threeD, horizontalAccuracy: accuracy, provider: provider)
        fix.receivedAt = receivedAt
        fix.clockSkewMilliseconds = receivedAt.map { $0 - timestamp }
        fix.satellites = satellites
        return fix
    }

    func signals(_ fix: Fix, previous: PreviousReport? = nil, country: String? = nil, now: Int64? = nil,
                 origin: LocationOrigin = .current, synchronized: Bool? = true) -> Signals {
        let record = Record(action: "login", triggeredAt: now ?? fix.timestamp, requestedMode: "default", collectionMode: "force-current",
                            fix: fix, permissions: [.fine], origin: origin, fallbackReason: nil, errorCode: .none)
        return SignalDetector.signals(of: record, fix: fix, country: country, previous: previous, thresholds: thresholds,
                                      countryCodeReplacement: "XB", clockSynchronized: synchronized)
    }

    func previous(_ latitude: Double, _ longitude: Double, at timestamp: Int64, accuracy: Double? = 5, country: String? = nil) -> PreviousReport {
        PreviousReport(recordTimestamp: timestamp, latitude: latitude, longitude: longitude, accuracy: accuracy,
                       countryCode: country, madeAt: timestamp)
    }

    /// SPEC §10.1: a report that jumped is never the next one's previous: a retry a second
    /// later, and every fix of a spoofer holding the false place, meets the same anchor, until
    /// the travel could have been made.
    @Test func aJumpStandsUntilTheTravelIsPossible() {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("signals-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        var detector = SignalDetector(settings: Settings(), stateDirectory: state, replay: false, clockSynchronized: true,
                                      clock: ManualMonotonicClock(), logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        func report(_ latitude: Double, _ longitude: Double, after seconds: Int64) -> Signals? {
            let at = start + seconds * 1000
            var record = Record(action: "login", triggeredAt: at, requestedMode: "default", collectionMode: "force-current",
                                fix: fix(latitude, longitude, at: at, receivedAt: at), permissions: [.fine], origin: .current,
                                fallbackReason: nil, errorCode: .none)
            detector.annotateAndSave(&record, country: nil, now: at)
            return record.signals
        }
        #expect(report(45.764, 4.8357, after: 0)?.jumped == false)  // Lyon
        for seconds: Int64 in [240, 241, 300, 3_600] {  // Dublin, 1,162 km away: 65 min at 300 m/s
            let signals = report(53.3498, -6.2603, after: seconds)
            #expect(signals?.jumped == true, "after \(seconds) s")
            #expect(signals?.previous?.recordTimestamp == start, "the anchor stays Lyon after \(seconds) s")
        }
        #expect(report(53.3498, -6.2603, after: 4_000)?.jumped == false)
        #expect(report(53.3498, -6.2603, after: 4_001)?.previous?.recordTimestamp == start + 4_000_000)
    }

    /// A clock that another holder's lock is released on: after `sleeps` sleeps, `release` runs.
    final class ReleasingClock: MonotonicClock, @unchecked Sendable {
        let manual = ManualMonotonicClock()
        private let sleeps = Mutex(0)
        let releaseAfter: Int
        let release: @Sendable () -> Void

        init(releaseAfter: Int, release: @escaping @Sendable () -> Void) {
            self.releaseAfter = releaseAfter
            self.release = release
        }

        var nowSeconds: Double { manual.nowSeconds }

        func sleep(for duration: Duration) {
            manual.sleep(for: duration)
            if sleeps.withLock({ $0 += 1; return $0 }) == releaseAfter { release() }
        }
    }

    /// The previous report's lock as another holder keeps it.
    final class HeldLock: Sendable {
        private let lock: Mutex<FileLock?>
        init(_ lock: sending FileLock) { self.lock = Mutex(lock) }
        func release() { lock.withLock { $0 = nil } }
        var isHeld: Bool { lock.withLock { $0 != nil } }
    }

    func lockedState() throws -> (state: String, lock: HeldLock) {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("signals-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        // flock locks belong to the open file: a second open in this process is another holder.
        let held = try #require(try FileLock.ifFree(path: state + "/" + StateFile.previousReportLock.rawValue))
        return (state, HeldLock(held))
    }

    func login(_ detector: inout SignalDetector) -> Record {
        var record = Record(action: "login", triggeredAt: start, requestedMode: "default", collectionMode: "force-current",
                            fix: fix(45.764, 4.8357, at: start, receivedAt: start), permissions: [.fine], origin: .current,
                            fallbackReason: nil, errorCode: .none)
        detector.annotateAndSave(&record, country: nil, now: start)
        return record
    }

    /// SPEC §10.1, one deadline for lock, query and decision: the previous report's lock,
    /// held by another, is waited for until the action's deadline passes, never past it (200 ms
    /// without one: track), then the report is unread (the policy is undetermined), never skipped.
    @Test(arguments: [(Int64?.none, 0.2), (50, 0.05), (3_000, 3.0)])
    func aHeldLockIsWaitedForUntilTheActionsDeadline(_ deadline: Int64?, _ waited: Double) throws {
        let (state, lock) = try lockedState()
        defer { try? FileManager.default.removeItem(atPath: state) }
        let clock = ManualMonotonicClock()
        var detector = SignalDetector(settings: Settings(), stateDirectory: state, replay: false, clockSynchronized: true,
                                      clock: clock, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        detector.actionDeadline = deadline.map { Deadline(milliseconds: $0, clock: clock) }
        let before = clock.nowSeconds
        _ = login(&detector)
        let spent = clock.nowSeconds - before
        #expect(detector.unreadable?.contains("is held by another process") == true, "\(String(describing: detector.unreadable))")
        #expect(spent > waited - 0.001 && spent < waited + 0.05, "waited \(spent) s")
        lock.release()
    }

    /// A lock let go before the deadline is taken, and the report read and written.
    @Test func aLockLetGoWithinTheDeadlineIsTaken() throws {
        let (state, lock) = try lockedState()
        defer { try? FileManager.default.removeItem(atPath: state) }
        // 5 ms a try: let go after a second, past the 200 ms that used to be all it waited.
        let clock = ReleasingClock(releaseAfter: 200) { lock.release() }
        var detector = SignalDetector(settings: Settings(), stateDirectory: state, replay: false, clockSynchronized: true,
                                      clock: clock, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        detector.actionDeadline = Deadline(milliseconds: 3_000, clock: clock)
        _ = login(&detector)
        #expect(detector.unreadable == nil, "\(String(describing: detector.unreadable))")
        #expect(!lock.isHeld)
        #expect(FileManager.default.fileExists(atPath: state + "/" + StateFile.previousReport.rawValue))
    }

    @Test func geodesicDistanceMatchesVincentysPublishedExample() {
        // Vincenty (1975), Flinders Peak to Buninyong: 54,972.271 m on the GRS80/WGS-84 ellipsoid.
        let distance = Geodesy.distance(latitude1: -(37 + 57 / 60.0 + 3.72030 / 3600), longitude1: 144 + 25 / 60.0 + 29.52440 / 3600,
                                        latitude2: -(37 + 39 / 60.0 + 10.15610 / 3600), longitude2: 143 + 55 / 60.0 + 35.38390 / 3600)
        #expect(abs(distance - 54_972.271) < 0.01)
        // Nearly antipodal points, where the iteration does not converge, still get a distance.
        let antipodal = Geodesy.distance(latitude1: 0, longitude1: 0, latitude2: 0.5, longitude2: 179.7)
        #expect(abs(antipodal - 19_936_000) < 100_000)
    }

    @Test func shortDistancesAgreeWithVincenty() {
        for latitude in [0.0, 45, 60, 88.5, -33] {
            for (dLat, dLon) in [(0.00009, 0.0), (0.0, 0.00013), (0.009, 0.009), (0.09, -0.05), (0.0, 0.099)] {
                let fast = Geodesy.distance(latitude1: latitude, longitude1: 179.95, latitude2: latitude + dLat, longitude2: 179.95 + dLon)
                let reference = Geodesy.vincenty(latitude1: latitude, longitude1: 179.95, latitude2: latitude + dLat, longitude2: 179.95 + dLon)
                #expect(abs(fast - reference) <= max(0.001, reference * 1e-5), "\(latitude) \(dLat) \(dLon): \(fast) \(reference)")
            }
        }
    }

    @Test func impossibleTravelJumps() {
        // 0.2° of latitude (22.1 km) in 60 s: 369 m/s, above the airliner's 300.
        let result = signals(fix(0.2, 0, at: start + 60_000), previous: previous(0, 0, at: start))
        #expect(result.jumped)
        let distance = try? #require(result.previous?.distance)
        #expect(abs((distance ?? 0) - 22_114.9) < 1)  // 0.2° of meridian at the equator, 110,574 m per degree
        #expect(abs(result.impliedSpeed! - (distance ?? 0) / 60) < 1e-9)
        #expect(result.reasons.first?.hasPrefix("jumped: 22.1 km in 60 s needs 369 m/s (limit 300 m/s)") == true)
    }

    /// A jump under the very satellites the previous fix rested on was made by the signals.
    @Test func aJumpUnderTheSameSatellitesLooksSpoofed() {
        func sky(_ prns: [UInt16], system: UInt8 = 1) -> SatelliteSet {
            var set = SatelliteSet()
            for prn in prns { set.insert(system: system, prn: prn) }
            return set
        }
        func summary(_ set: SatelliteSet) -> SatelliteSummary {
            SatelliteSummary(used: set.count, measured: set.count, cn0Mean: 40, cn0StdDev: 6, tracked: set)
        }
        var before = previous(0, 0, at: start)
        before.satellites = sky([2, 5, 10, 12, 13, 24])
        // The same six satellites, listed in another order: 22 km in 60 s.
        let same = signals(fix(0.2, 0, at: start + 60_000, satellites: summary(sky([24, 13, 12, 10, 5, 2]))), previous: before)
        #expect(same.jumped && same.spoofingSuspected)
        #expect(same.reasons.contains("spoofingSuspected: the position jumped while the same 6 satellites were tracked"))
        // One satellite more, or the same PRNs of another system: the sky changed.
        #expect(!signals(fix(0.2, 0, at: start + 60_000, satellites: summary(sky([2, 5, 10, 12, 13, 24, 25]))), previous: before).spoofingSuspected)
        #expect(!signals(fix(0.2, 0, at: start + 60_000, satellites: summary(sky([2, 5, 10, 12, 13, 24], system: 3))), previous: before).spoofingSuspected)
        // The same satellites without a jump: a device that stays put.
        #expect(!signals(fix(0.0001, 0, at: start + 60_000, satellites: summary(sky([2, 5, 10, 12, 13, 24]))), previous: before).spoofingSuspected)
        // Time going back (a replayed log played again) passes the same sky again: a jump,
        // said as such, but no evidence of spoofing.
        var later = previous(0, 0, at: start + 120_000)
        later.satellites = sky([2, 5, 10, 12, 13, 24])
        let back = signals(fix(0.2, 0, at: start, satellites: summary(sky([2, 5, 10, 12, 13, 24]))), previous: later)
        #expect(back.jumped && !back.spoofingSuspected, "\(back.reasons)")
        #expect(back.reasons == ["jumped: 22.1 km while the time went back 2 min (limit 300 m/s)"])
        // Three satellites say too little.
        before.satellites = sky([2, 5, 10])
        #expect(!signals(fix(0.2, 0, at: start + 60_000, satellites: summary(sky([2, 5, 10]))), previous: before).spoofingSuspected)
    }

    @Test func noiseNeverJumps() {
        // 30 m in no time at all, but each fix is good to only 20 m: the circles overlap.
        let noisy = signals(fix(0.00027, 0, at: start, accuracy: 20), previous: previous(0, 0, at: start, accuracy: 20))
        #expect(!noisy.jumped && noisy.impliedSpeed == nil)
        // The same 30 m in no time from two 5 m fixes is a jump.
        let sharp = signals(fix(0.00027, 0, at: start, accuracy: 5), previous: previous(0, 0, at: start, accuracy: 5))
        #expect(sharp.jumped)
        #expect(sharp.reasons.first == "jumped: 29.9 m with no time between the reports (limit 300 m/s)")
        // Fixes of unknown accuracy are given signals.maxAccuracy (100 m) each: 150 m in no time is not a jump.
        #expect(!signals(fix(0.00135, 0, at: start, accuracy: nil), previous: previous(0, 0, at: start, accuracy: nil)).jumped)
    }

    @Test func fastButPossibleTravelDoesNotJump() {
        // 22.1 km in 2 minutes: 184 m/s.
        #expect(!signals(fix(0.2, 0, at: start + 120_000), previous: previous(0, 0, at: start)).jumped)
    }

    @Test func countryChangesWithinTheWindowOnly() {
        let within = signals(fix(48.85, 2.35, at: start + 3_600_000), previous: previous(40.7, -74, at: start, country: "US"), country: "FR")
        #expect(within.countryChanged && within.jumped)
        #expect(within.reasons.contains("countryChanged: US -> FR within 24 h"))
        let later = signals(fix(48.85, 2.35, at: start + 90_000_000), previous: previous(40.7, -74, at: start, country: "US"), country: "FR")
        #expect(!later.countryChanged)
        let replaced = signals(fix(48.85, 2.35, at: start + 3_600_000), previous: previous(40.7, -74, at: start, country: "XB"), country: "FR")
        #expect(!replaced.countryChanged)
    }

    @Test func staleInaccurateAndReplayed() {
        let old = signals(fix(1, 1, at: start, accuracy: 150), now: start + 700_000, origin: .lastKnown)
        #expect(old.stale && old.inaccurate && !old.replayed && old.clockSkewMilliseconds == nil && old.previous == nil)
        #expect(old.reasons == ["stale: the fix is 11 min old (limit 10 min)", "inaccurate: accuracy 150 m (limit 100 m)"])
        #expect(signals(fix(1, 1, at: start, accuracy: nil)).inaccurate)
        let replay = signals(fix(1, 1, at: start, provider: .nmeaReplay))
        #expect(replay.replayed && replay.clockSkewMilliseconds == nil)
        let onTime = signals(fix(1, 1, at: start, receivedAt: start + 35))
        #expect(!onTime.replayed && !onTime.clockSkewed && onTime.clockSkewMilliseconds == 35)
    }

    /// SPEC §10.1: a skew counts against the fix only when the system clock is synchronised;
    /// unsynchronised, it says the system clock is wrong. A remembered fix keeps its skew.
    @Test func clockSkewCountsOnlyAgainstASynchronisedClock() {
        let skewed = signals(fix(1, 1, at: start, receivedAt: start + 6_000))
        #expect(skewed.clockSkewed && !skewed.replayed && skewed.clockSkewMilliseconds == 6_000 && skewed.systemClockSynchronized == true)
        #expect(skewed.reasons == ["clockSkewed: the fix's time was 6 s behind the synchronised system clock when it arrived (limit 5 s)"])
        let ahead = signals(fix(1, 1, at: start + 20_000, receivedAt: start))
        #expect(ahead.clockSkewed && ahead.clockSkewMilliseconds == -20_000)
        let unsynchronised = signals(fix(1, 1, at: start, receivedAt: start + 6_000), synchronized: false)
        #expect(!unsynchronised.clockSkewed && unsynchronised.systemClockSynchronized == false && unsynchronised.reasons.isEmpty)
        let remembered = signals(fix(1, 1, at: start, receivedAt: start + 6_000), now: start + 60_000, origin: .lastKnown)
        #expect(remembered.clockSkewMilliseconds == 6_000)
        let rollover = fix(1, 1, at: start + 619_315_200_000, receivedAt: start)
        #expect(signals(rollover).clockSkewMilliseconds == -619_315_200_000)
    }

    @Test(arguments: Fix.Quality.allCases)
    func unmeasuredFixesAreSaid(_ quality: Fix.Quality) {
        var said = fix(1, 1, at: start)
        said.quality = quality
        let result = signals(said)
        let unmeasured = [Fix.Quality.estimated, .manual, .simulator].contains(quality)
        #expect(result.estimatedFix == unmeasured)
        #expect(result.reasons.contains { $0.hasPrefix("estimatedFix: ") } == unmeasured)
        #expect(!signals(fix(1, 1, at: start)).estimatedFix)
    }

    /// gpsd's jamming indicator above `signals.maxJamming` (100 by default) and an open or
    /// shorted antenna are said; a receiver that reports neither leaves both out.
    @Test func jammingAndAntennaFaultsAreSaid() {
        var jammed = fix(1, 1, at: start)
        (jammed.jamming, jammed.antenna) = (101, .open)
        let result = signals(jammed)
        #expect(result.jamming == 101 && result.jammed && result.antenna == .open && result.antennaFault)
        #expect(result.reasons.contains("jammed: the receiver's jamming indicator is 101 of 255 (limit 100)"))
        #expect(result.reasons.contains("antennaFault: the receiver reports its antenna open (disconnected)"))
        (jammed.jamming, jammed.antenna) = (100, .ok)
        let quiet = signals(jammed)
        #expect(quiet.jamming == 100 && !quiet.jammed && quiet.antenna == .ok && !quiet.antennaFault && quiet.reasons.isEmpty)
        jammed.antenna = .short
        #expect(signals(jammed).reasons.contains("antennaFault: the receiver reports its antenna shorted"))
        let silent = signals(fix(1, 1, at: start))
        #expect(silent.jamming == nil && silent.antenna == nil && !silent.jammed && !silent.antennaFault)
    }

    /// Simulator output on a live source is a simulator's signal reaching the device; in a
    /// replayed log it is a test, and only `estimatedFix`.
    @Test func simulatorOutputOnALiveSourceLooksSpoofed() {
        var live = fix(1, 1, at: start, receivedAt: start)
        live.quality = .simulator
        let result = signals(live)
        #expect(result.spoofingSuspected && result.estimatedFix)
        #expect(result.reasons.contains("spoofingSuspected: the receiver reports simulator output on a live source"))
        var replayed = fix(1, 1, at: start, provider: .nmeaReplay)
        replayed.quality = .simulator
        #expect(!signals(replayed).spoofingSuspected && signals(replayed).estimatedFix)
        live.quality = .manual
        #expect(!signals(live).spoofingSuspected)
    }

    @Test func flagsKeepEveryBooleanThroughTheSpool() {
        var original = Signals()
        (original.jumped, original.clockSkewed, original.estimatedFix, original.systemClockSynchronized) = (true, true, true, false)
        (original.jammed, original.antennaFault) = (true, true)
        var copy = Signals()
        copy.setFlags(original.flags)
        #expect(copy.jumped && copy.clockSkewed && copy.estimatedFix && copy.systemClockSynchronized == false && !copy.stale)
        #expect(copy.jammed && copy.antennaFault)
        var unknown = Signals()
        unknown.setFlags(Signals().flags)
        #expect(unknown.systemClockSynchronized == nil)
    }

    @Test func evenSignalsLookSpoofed() {
        let even = SatelliteSummary(used: 8, measured: 8, cn0Mean: 45, cn0StdDev: 0.8)
        #expect(signals(fix(1, 1, at: start, satellites: even)).spoofingSuspected)
        let few = SatelliteSummary(used: 4, measured: 4, cn0Mean: 45, cn0StdDev: 0.8)
        #expect(!signals(fix(1, 1, at: start, satellites: few)).spoofingSuspected)
        let loud = SatelliteSummary(used: 3, measured: 3, cn0Mean: 58, cn0StdDev: 6)
        #expect(signals(fix(1, 1, at: start, satellites: loud)).spoofingSuspected)
        let sky = SatelliteSummary(used: 9, measured: 9, cn0Mean: 41.2, cn0StdDev: 5.8)
        let honest = signals(fix(1, 1, at: start, satellites: sky))
        #expect(!honest.spoofingSuspected && honest.satellites == sky && honest.reasons.isEmpty)
    }

    @Test func belowGPSLocationTheFiguresGo() {
        let full = signals(fix(48.85, 2.35, at: start + 3_600_000), previous: previous(40.7, -74, at: start, country: "US"), country: "FR")
        let record = Record(action: "login", triggeredAt: start + 3_600_000, requestedMode: "default", collectionMode: "force-current",
                            fix: fix(48.85, 2.35, at: start + 3_600_000), permissions: [.fine], origin: .current,
                            fallbackReason: nil, errorCode: .none)
        var withSignals = record
        withSignals.signals = full
        let city = OutputPolicy(attributes: LocationPrecision.city.attributes).applied(to: withSignals).signals
        #expect(city?.previous?.distance == nil && city?.impliedSpeed == nil && city?.previous?.countryCode == "US")
        #expect(city?.jumped == true && city?.countryChanged == true)
        #expect(city?.reasons.allSatisfy { !$0.contains(where: \.isNumber) } == true)
        let none = OutputPolicy(attributes: LocationPrecision.none.attributes).applied(to: withSignals).signals
        #expect(none?.previous?.countryCode == nil && none?.previous?.recordTimestamp == start)
    }
}
