import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging
import Testing

/// A source whose answers each test sets: the seam gpsd and replay both implement.
final class ScriptedSource: LocationSource {
    let provider = Fix.Provider.gpsd
    let name = "scripted"
    var currentTime: Int64?
    var held: Fix?
    var next: SourceWait = .timedOut
    var failure: SourceError?
    /// The clock the resolver measures with, and how long `heldFix` takes on it, as a slow
    /// gpsd would.
    let clock = ManualMonotonicClock()
    var heldDelaySeconds = 0.0
    private(set) var waits: [Int] = []

    func heldFix() throws -> Fix? {
        if let failure { throw failure }
        clock.advance(seconds: heldDelaySeconds)
        return held
    }

    func waitForFix(timeoutMilliseconds: Int) throws -> SourceWait {
        if let failure { throw failure }
        waits.append(timeoutMilliseconds)
        return next
    }
}

@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct LocationResolverTests {
    static let now: Int64 = 1_795_348_800_000
    let state = FileManager.default.temporaryDirectory.appendingPathComponent("resolver-\(UUID().uuidString)").path
    let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    func fix(ageMilliseconds: Int64, latitude: Double = 53.0) -> Fix {
        Fix(timestamp: Self.now - ageMilliseconds, latitude: latitude, longitude: -6.0, mode: .threeD, provider: .gpsd)
    }

    /// A resolver over `source` with its own state directory holding `stored`.
    func resolver(_ source: ScriptedSource, stored: Fix? = nil, state: String? = nil) throws -> LocationResolver {
        let store = LastKnownStore(stateDirectory: state ?? NSTemporaryDirectory() + UUID().uuidString, logger: logger)
        if let stored { try store.update(with: stored, now: Self.now) }
        return LocationResolver(source: { source }, store: store, clock: FixedClock(Self.now), elapsed: source.clock, nowOverride: nil,
                                currentMaxAgeMilliseconds: 2000, logger: logger)
    }

    @Test func disabledReportsNothingAndNeverOpensTheSource() throws {
        var opened = false
        let store = LastKnownStore(stateDirectory: state, logger: logger)
        let resolver = LocationResolver(source: { opened = true; return ScriptedSource() }, store: store,
                                        clock: FixedClock(Self.now), elapsed: ManualMonotonicClock(), nowOverride: nil,
                                        currentMaxAgeMilliseconds: 2000, logger: logger)
        let decision = try resolver.decide(mode: .disabled, timeoutMilliseconds: 1500)
        #expect(decision.fix == nil && decision.origin == nil && decision.errorCode == .none)
        #expect(!opened)
    }

    @Test func forceCurrentTakesAFreshFix() throws {
        let source = ScriptedSource()
        source.currentTime = Self.now  // its own clock, as a replay: the whole timeout is for waiting
        source.next = .fix(fix(ageMilliseconds: 100))
        let decision = try resolver(source).decide(mode: .forceCurrent, timeoutMilliseconds: 1500)
        #expect(decision.origin == .current)
        #expect(decision.fix == fix(ageMilliseconds: 100))
        #expect(source.waits == [1500])
    }

    @Test func forceCurrentUsesAHeldFixWithinCurrentMaxAge() throws {
        let source = ScriptedSource()
        source.held = fix(ageMilliseconds: 1500)
        let decision = try resolver(source).decide(mode: .forceCurrent, timeoutMilliseconds: 1500)
        #expect(decision.origin == .current)
        #expect(source.waits.isEmpty)
    }

    /// A clock the kernel says is synchronised, at `LocationResolverTests.now`.
    struct SynchronizedClock: WallClock {
        var nowMilliseconds: Int64 { LocationResolverTests.now }
        var isSynchronized: Bool? { true }
    }

    /// SPEC §3: a fix gpsd held, whose arrival geolocate did not see, is aged from its date
    /// only on a synchronised clock; otherwise its age is unknown: not current, reported as
    /// last known with no age, and never remembered.
    @Test(arguments: [false, true]) func aHeldFixOfUnseenArrivalIsAgedByItsDateOnlyOnASynchronisedClock(_ synchronized: Bool) throws {
        let source = ScriptedSource()
        var held = fix(ageMilliseconds: 500)
        held.receivedAt = held.timestamp
        held.arrivalUnknown = true
        source.held = held
        let state = NSTemporaryDirectory() + UUID().uuidString
        var resolver = try resolver(source, state: state)
        if synchronized { resolver.clock = SynchronizedClock() }
        let decision = try resolver.decide(mode: .forceCurrent, timeoutMilliseconds: 1500)
        #expect(decision.fix?.latitude == held.latitude)
        #expect(decision.origin == (synchronized ? .current : .lastKnown))
        #expect(decision.age == (synchronized ? 500 : nil))
        #expect(FileManager.default.fileExists(atPath: state + "/last-known.json") == synchronized)
    }

    @Test func aLiveSourceWaitsOnlyForWhatIsLeftOfTheTimeout() throws {
        let source = ScriptedSource()
        source.heldDelaySeconds = 0.2
        source.held = fix(ageMilliseconds: 60_000)
        _ = try resolver(source).decide(mode: .forceCurrent, timeoutMilliseconds: 1500)
        #expect(source.waits == [1300])
    }

    @Test func lastKnownIsTheFresherOfStoreAndSource() throws {
        let newerHeld = ScriptedSource()
        newerHeld.held = fix(ageMilliseconds: 10_000, latitude: 51)
        let fromSource = try resolver(newerHeld, stored: fix(ageMilliseconds: 20_000, latitude: 52))
            .decide(mode: .forceLastKnown, timeoutMilliseconds: 1500)
        #expect(fromSource.fix?.latitude == 51)

        let olderHeld = ScriptedSource()
        olderHeld.held = fix(ageMilliseconds: 30_000, latitude: 51)
        let fromStore = try resolver(olderHeld, stored: fix(ageMilliseconds: 20_000, latitude: 52))
            .decide(mode: .forceLastKnown, timeoutMilliseconds: 1500)
        #expect(fromStore.fix?.latitude == 52)
    }

    @Test func forceCurrentTimesOutToLastKnown() throws {
        let source = ScriptedSource()
        source.held = fix(ageMilliseconds: 60_000)
        let decision = try resolver(source, stored: fix(ageMilliseconds: 600_000, latitude: 52)).decide(
            mode: .forceCurrent, timeoutMilliseconds: 1500)
        #expect(decision.origin == .lastKnown)
        #expect(decision.fallbackReason == .timeout)
        #expect(decision.fix?.latitude == 53)  // the held fix is fresher than the stored one
        #expect(decision.errorCode == .none)
    }

    @Test func forceCurrentTimeoutWithNothingKnownIs1056() throws {
        let decision = try resolver(ScriptedSource()).decide(mode: .forceCurrent, timeoutMilliseconds: 1500)
        #expect(decision.fix == nil)
        #expect(decision.fallbackReason == .timeout)
        #expect(decision.errorCode == .timeout)
    }

    @Test func unavailableSourceFallsBackToStore() throws {
        let source = ScriptedSource()
        source.failure = .unavailable("gpsd://localhost:1: connection refused")
        let decision = try resolver(source, stored: fix(ageMilliseconds: 5000)).decide(mode: .forceCurrent, timeoutMilliseconds: 1500)
        #expect(decision.fallbackReason == .unavailable)
        #expect(decision.origin == .lastKnown)
        let nothing = try resolver(source).decide(mode: .forceCurrent, timeoutMilliseconds: 1500)
        #expect(nothing.errorCode == .unavailable)
    }

    @Test func forceLastKnownNeverWaits() throws {
        let source = ScriptedSource()
        source.next = .fix(fix(ageMilliseconds: 0))
        let decision = try resolver(source, stored: fix(ageMilliseconds: 86_400_000)).decide(mode: .forceLastKnown, timeoutMilliseconds: 1500)
        #expect(decision.origin == .lastKnown)
        #expect(decision.fix == fix(ageMilliseconds: 86_400_000))
        #expect(source.waits.isEmpty)
        let none = try resolver(ScriptedSource()).decide(mode: .forceLastKnown, timeoutMilliseconds: 1500)
        #expect(none.errorCode == .unavailable && none.fallbackReason == nil)
    }

    @Test func lastKnownWithinAgeIsUsed() throws {
        let source = ScriptedSource()
        let decision = try resolver(source, stored: fix(ageMilliseconds: 29 * 60_000)).decide(
            mode: .lastKnown(maxAgeMilliseconds: 30 * 60_000), timeoutMilliseconds: 1500)
        #expect(decision.origin == .lastKnown)
        #expect(source.waits.isEmpty)
    }

    @Test func lastKnownTooOldQueriesTheSource() throws {
        let source = ScriptedSource()
        source.currentTime = Self.now  // its own clock: the whole timeout is for waiting
        source.next = .fix(fix(ageMilliseconds: 0, latitude: 54))
        let decision = try resolver(source, stored: fix(ageMilliseconds: 31 * 60_000)).decide(
            mode: .lastKnown(maxAgeMilliseconds: 30 * 60_000), timeoutMilliseconds: 1500)
        #expect(decision.origin == .current)
        #expect(decision.fix?.latitude == 54)
        #expect(source.waits == [1500])
    }

    @Test func everyFixSeenUpdatesTheStore() throws {
        let source = ScriptedSource()
        source.next = .fix(fix(ageMilliseconds: 0, latitude: 55))
        _ = try resolver(source, state: state).decide(mode: .forceCurrent, timeoutMilliseconds: 1500)
        #expect(try LastKnownStore(stateDirectory: state, logger: logger).load(now: Self.now)?.latitude == 55)
    }
}

@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct ReplayTimeoutTests {
    let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    /// Virtual time: the 3 s no-fix prelude exceeds 1500 ms of log time, instantly.
    @Test func replayTimeoutRunsOnLogTime() throws {
        let source = try NMEAReplaySource(path: TestPaths.fixture("prelude-3s.nmea").path, pacingClock: ManualMonotonicClock())
        #expect(try source.waitForFix(timeoutMilliseconds: 1500) == .timedOut)
        let later = try NMEAReplaySource(path: TestPaths.fixture("prelude-3s.nmea").path, pacingClock: ManualMonotonicClock())
        guard case .fix(let fix) = try later.waitForFix(timeoutMilliseconds: 5000) else {
            Issue.record("expected a fix within 5 s of log time")
            return
        }
        #expect(fix.timestamp == 1_795_341_603_000)  // 2026-11-22T10:00:03Z
        #expect(later.currentTime == fix.timestamp)
    }

    @Test func missingReplayFileIs66() {
        #expect(throws: GeolocateError.inputMissing(path: "/nonexistent.nmea")) {
            try NMEAReplaySource(path: "/nonexistent.nmea", pacingClock: ManualMonotonicClock())
        }
        #expect((try? NMEAReplaySource(path: "/tmp", pacingClock: ManualMonotonicClock())) == nil)
    }

    @Test func replaySpeedParsing() throws {
        #expect(try ReplaySpeed(parsing: "asap") == .asap)
        #expect(try ReplaySpeed(parsing: "realtime") == .factor(1))
        #expect(try ReplaySpeed(parsing: "10x") == .factor(10))
        #expect(throws: GeolocateError.self) { try ReplaySpeed(parsing: "fast") }
        #expect(throws: GeolocateError.self) { try ReplaySpeed(parsing: "0x") }
        // Pacing that would take centuries, or a factor beyond any use, is refused.
        #expect(throws: GeolocateError.self) { try ReplaySpeed(parsing: "1e-300x") }
        #expect(throws: GeolocateError.self) { try ReplaySpeed(parsing: "1e30x") }
        #expect(throws: GeolocateError.self) { try ReplaySpeed(parsing: "nanx") }
    }

    /// `realtime`-style pacing really waits: 4 s of log at 20x sleeps 0.2 s on the pacing clock.
    @Test func pacedReplayFollowsItsClock() throws {
        let clock = ManualMonotonicClock()
        let source = try NMEAReplaySource(path: TestPaths.fixture("nofix-only.nmea").path, speed: .factor(20), pacingClock: clock)
        let start = clock.nowSeconds
        #expect(try source.waitForFix(timeoutMilliseconds: 4000) == .timedOut)
        #expect(abs(clock.nowSeconds - start - 0.2) < 0.01)
    }
}
