import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging
import Testing

/// A source that gives a list of fixes, one per wait, then ends.
final class FixListSource: LocationSource {
    let provider = Fix.Provider.nmeaReplay
    let name = "fix list"
    private var fixes: [Fix]
    private(set) var currentTime: Int64?

    init(_ fixes: [Fix]) { self.fixes = fixes }

    func heldFix() throws -> Fix? { nil }

    func waitForFix(timeoutMilliseconds: Int) throws -> SourceWait {
        guard !fixes.isEmpty else { return .timedOut }
        let fix = fixes.removeFirst()
        currentTime = fix.timestamp
        return .fix(fix)
    }

    var hasEnded: Bool { fixes.isEmpty }
}

/// A live source that gives some fixes and then goes away for good.
final class VanishingSource: LocationSource {
    let provider = Fix.Provider.gpsd
    let name = "gpsd://vanishing"
    var currentTime: Int64? { nil }
    private var fixes: [Fix]

    init(_ fixes: [Fix]) { self.fixes = fixes }

    func heldFix() throws -> Fix? { nil }

    func waitForFix(timeoutMilliseconds: Int) throws -> SourceWait {
        guard !fixes.isEmpty else { throw SourceError.unavailable("gpsd://vanishing: gone") }
        return .fix(fixes.removeFirst())
    }
}

/// `Tracker` end to end on replays and fix lists, with the records it prints as the evidence.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct TrackerTests {
    let state = FileManager.default.temporaryDirectory.appendingPathComponent("track-\(UUID().uuidString)").path
    let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
    let utc = TimeZone(identifier: "UTC")!

    /// Runs a tracker and returns the records it printed (parsed) and its summary.
    func track(_ request: TrackRequest, settings: Settings = Settings(),
               source: LocationSource? = nil) throws -> (records: [[String: Any]], summary: TrackSummary) {
        var lines: [String] = []
        var request = request
        request.permission = [.fine]
        request.toStdout = true
        let tracker = Tracker(CommandContext(settings: settings, configPath: "", environment: ["GEOLOCATE_STATE_DIR": state], clock: SystemClock(),
                                             elapsed: SystemMonotonicClock(), logger: logger), timeZone: utc, output: { lines.append(String(decoding: $0, as: UTF8.self)) },
                              openSource: { specifier, opening in try source ?? SourceOpener.replaysOnly.open(specifier, opening) })
        let summary = try tracker.run(request)
        let records = try lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        return (records, summary)
    }

    static func time(_ record: [String: Any]) -> Int64? {
        ((record["location"] as? [String: Any])?["recordTimestamp"] as? Int).map(Int64.init)
    }

    /// The same rule written again from the generator's truth: first fix, then interval or distance.
    static func expectedEmissions(_ truth: [NMEAGenerator.Truth], interval: Int64, distance: Double) -> [Int64] {
        func metres(_ a: NMEAGenerator.Truth, _ b: NMEAGenerator.Truth) -> Double {
            let r = 6_371_008.8, rad = Double.pi / 180
            let h = pow(sin((b.lat - a.lat) * rad / 2), 2) + cos(a.lat * rad) * cos(b.lat * rad) * pow(sin((b.lon - a.lon) * rad / 2), 2)
            return 2 * r * asin(h.squareRoot())
        }
        var emitted: [Int64] = []
        var last: NMEAGenerator.Truth?
        for epoch in truth where epoch.fix > 0 {
            guard let time = epoch.milliseconds else { continue }
            if let previous = last, let previousTime = previous.milliseconds,
               time - previousTime < interval, metres(previous, epoch) < distance { continue }
            emitted.append(time)
            last = epoch
        }
        return emitted
    }

    @Test(arguments: [(60_000 as Int64, 250.0), (300_000, 300), (1_800_000, 500)])
    func intervalOrDistanceAgainstTheGeneratorsTruth(interval: Int64, distance: Double) throws {
        let generated = try NMEAGenerator(["--epochs", "3600", "--seed", "21"])
        defer { generated.remove() }
        var policy = TrackPolicy()
        policy.intervalMilliseconds = interval
        policy.distanceMetres = distance
        policy.visits = nil
        let (records, summary) = try track(TrackRequest(policy: policy, source: .nmea(path: generated.log), toSpool: false))
        let expected = Self.expectedEmissions(try generated.truth(), interval: interval, distance: distance)
        #expect(summary.fixes == 3600)
        #expect(records.compactMap(Self.time) == expected)
        #expect(records.count > 5)
        #expect(records.allSatisfy { $0["context"] as? String == "regular" && $0["action"] as? String == "track" })
    }

    @Test func windowCollectsOnlyInsideItsLocalTimes() throws {
        let generated = try NMEAGenerator(["--epochs", "3600", "--seed", "21"])  // 12:00:00 to 12:59:59 UTC
        defer { generated.remove() }
        var policy = TrackPolicy()
        policy.everyFix = true
        policy.window = try CollectionWindow(parsing: "12:10-12:39")
        let (records, summary) = try track(TrackRequest(policy: policy, source: .nmea(path: generated.log), toSpool: false))
        let inside = try generated.truth().compactMap(\.milliseconds).filter {
            let minute = ($0 / 60_000) % 1440
            return (12 * 60 + 10...12 * 60 + 39).contains(minute)
        }
        #expect(records.compactMap(Self.time) == inside)
        #expect(inside.count == 30 * 60)
        #expect(summary.outsideWindow == 3600 - inside.count)
    }

    @Test(arguments: [(AccuracyLevel.best, 5), (.tenMetres, 1), (.hundredMetres, 2), (.kilometre, 3), (.threeKilometres, 4)])
    func accuracyLevelDropsWorseFixes(level: AccuracyLevel, kept: Int) throws {
        let accuracies: [Double?] = [5, 2500, 150, nil, 50]
        let fixes = accuracies.enumerated().map { index, accuracy in
            Fix(timestamp: 1_795_348_800_000 + Int64(index) * 1000, latitude: 53, longitude: -6, mode: .threeD,
                horizontalAccuracy: accuracy, provider: .nmeaReplay)
        }
        var policy = TrackPolicy()
        policy.everyFix = true
        policy.accuracy = level
        let (records, summary) = try track(TrackRequest(policy: policy, toSpool: false), source: FixListSource(fixes))
        #expect(records.count == kept)
        #expect(summary.tooInaccurate == 5 - kept)
    }

    @Test func aFifteenMinuteStopIsOneVisit() throws {
        let (records, _) = try track(TrackRequest(source: .nmea(path: TestPaths.fixture("stay-15min.nmea").path), toSpool: false))
        let stopStart: Int64 = 1_795_338_120_000  // 2026-11-22T09:02:00Z
        let stopEnd: Int64 = stopStart + 900_000
        let entries = records.filter { $0["context"] as? String == "visit_entry" }.compactMap(Self.time)
        let exits = records.filter { $0["context"] as? String == "visit_exit" }.compactMap(Self.time)
        try #require(entries.count == 1 && exits.count == 1, "\(records.map { $0["context"] ?? "" })")
        // The stay is anchored at most 200 m before the stop, so it is a visit by 10 minutes into it.
        #expect(entries[0] <= stopStart + 600_000 && entries[0] > stopStart + 500_000)
        // It ends with the first fix 200 m away once the second drive has started.
        #expect(exits[0] > stopEnd && exits[0] < stopEnd + 120_000)
        #expect(records.filter { $0["context"] as? String == "regular" }.count == records.count - 2)
    }

    @Test func countAndDurationStopTheRun() throws {
        var policy = TrackPolicy()
        policy.everyFix = true
        policy.count = 7
        let counted = try track(TrackRequest(policy: policy, source: .nmea(path: TestPaths.fixture("gpsd-fixes.nmea").path), toSpool: false))
        #expect(counted.records.count == 7)

        policy.count = nil
        policy.durationMilliseconds = 30_000
        let timed = try track(TrackRequest(policy: policy, source: .nmea(path: TestPaths.fixture("gpsd-fixes.nmea").path), toSpool: false))
        let times = timed.records.compactMap(Self.time)
        #expect(times.count >= 30 && times.count <= 32)
        #expect((times.last ?? 0) - (times.first ?? 0) <= 31_000)
    }

    @Test func recordsGoToTheSpoolAsPrinted() throws {
        var policy = TrackPolicy()
        policy.everyFix = true
        let (records, summary) = try track(TrackRequest(policy: policy, source: .nmea(path: TestPaths.fixture("gpsd-fixes.nmea").path)))
        let spool = try Spool(stateDirectory: state, clock: SystemClock())
        #expect(summary.spooled == 120 && records.count == 120)
        #expect(try spool.count() == 120)
        let spooledIDs = try spool.mosaicLines().compactMap {
            (try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["id"] as? String
        }
        #expect(spooledIDs == records.compactMap { $0["id"] as? String })
        // The last fix seen is the last known location for the next trigger.
        let last = try #require(Self.time(records[119]))
        #expect(try LastKnownStore(stateDirectory: state, kind: .replay, logger: logger).load(now: last)?.timestamp == last)
    }

    @Test func fieldsSwitchedOffAreNotCarried() throws {
        var settings = Settings()
        settings.fields.speed = false
        settings.fields.course = false
        settings.fields.deviceModel = false
        settings.fields.osVersion = false
        settings.fields.locationContext = false
        var policy = TrackPolicy()
        policy.count = 1
        let (records, _) = try track(TrackRequest(policy: policy, source: .nmea(path: TestPaths.fixture("gpsd-fixes.nmea").path),
                                                  toSpool: false), settings: settings)
        let record = try #require(records.first)
        let location = try #require(record["location"] as? [String: Any])
        #expect(location["speed"] == nil && location["course"] == nil)
        #expect(location["accuracy"] != nil && location["altitude"] != nil)
        #expect(record["context"] == nil && record["deviceModel"] == nil && record["osVersion"] == nil)
        let deviceID = try #require(record["deviceId"] as? String)
        #expect(UUID(uuidString: deviceID) != nil)
        // The same install keeps its id.
        #expect(try DeviceInfo.current(stateDirectory: state).id == deviceID)
    }

    @Test func recordsMadeBeforeAnOutageAreCommittedDuringIt() throws {
        let fixes = (0..<3).map { Fix(timestamp: 1_795_348_800_000 + Int64($0) * 1000, latitude: 53, longitude: -6,
                                      mode: .threeD, provider: .gpsd) }
        let stop = StopFlag()
        let state = self.state
        let logger = self.logger
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            var policy = TrackPolicy()
            policy.everyFix = true
            var opened = false
            let tracker = Tracker(CommandContext(settings: Settings(), configPath: "", environment: ["GEOLOCATE_STATE_DIR": state], clock: SystemClock(),
                                             elapsed: SystemMonotonicClock(), logger: logger), stop: stop,
                                  output: { _ in }, openSource: { _, _ in
                                      if opened { throw SourceError.unavailable("gpsd://vanishing: refused") }
                                      opened = true
                                      return VanishingSource(fixes)
                                  })
            _ = try? tracker.run(TrackRequest(policy: policy, source: .defaultGPSD, permission: [.fine]))
            finished.signal()
        }
        thread.start()
        // All three are in the spool while the source is still away and the run goes on.
        let committed = waitUntilTrue(.seconds(5)) { ((try? Spool(stateDirectory: state, clock: SystemClock()).count()) ?? 0) == 3 }
        stop.request()
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(committed)
    }

    @Test func noPermissionCollectsNothing() throws {
        let tracker = Tracker(CommandContext(settings: Settings(), configPath: "", environment: ["GEOLOCATE_STATE_DIR": state], clock: SystemClock(),
                                             elapsed: SystemMonotonicClock(), logger: logger),
                              output: { _ in Issue.record("printed a record without permission") })
        #expect(throws: GeolocateError.self) {
            try tracker.run(TrackRequest(source: .nmea(path: TestPaths.fixture("gpsd-fixes.nmea").path)))
        }
    }

    @Test func aStopRequestEndsTheRunWithEverythingCommitted() throws {
        let stop = StopFlag()
        var lines = 0
        var policy = TrackPolicy()
        policy.everyFix = true
        let tracker = Tracker(CommandContext(settings: Settings(), configPath: "", environment: ["GEOLOCATE_STATE_DIR": state], clock: SystemClock(),
                                             elapsed: SystemMonotonicClock(), logger: logger), stop: stop,
                              output: { _ in lines += 1; if lines == 10 { stop.request() } })
        let summary = try tracker.run(TrackRequest(policy: policy, source: .nmea(path: TestPaths.fixture("gpsd-fixes.nmea").path),
                                                   permission: [.fine], toStdout: true))
        #expect(summary.records == 10)
        #expect(try Spool(stateDirectory: state, clock: SystemClock()).count() == 10)
    }
}

/// Polls `condition` until it holds or `limit` passes.
func waitUntilTrue(_ limit: Duration, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        usleep(10_000)
    }
    return true
}
