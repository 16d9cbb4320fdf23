import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import Testing

/// `triggeredAt` is defined once (man page, SOURCES AND TIME): when the location was decided,
/// on the source's clock, and never earlier than the fix reported. Expected times are read
/// from the log's own sentences here, not from geolocate's output. In this process, through
/// `Trigger.respond` and `Tracker.command` (moved from TriggeredAtEndToEndTests).
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct TriggeredAtReplayTests {
    let geolocate = InProcessTrigger()
    let log = InProcessTrigger.example("maynooth-drive.nmea")

    /// The log's first time of day, dated by its first RMC, and its first RMC with status A.
    struct LogTimes {
        var start: Int64
        var firstFix: Int64
        var sentences: [String]

        init(_ path: String) throws {
            let text = try String(contentsOfFile: TestPaths.projectRoot.appendingPathComponent(path).path, encoding: .utf8)
            sentences = text.split(separator: "\n").map(String.init).filter { $0.hasPrefix("$") }
            let fields = sentences.map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
            let rmc = try #require(fields.first { $0[0].hasSuffix("RMC") })
            let date = rmc[9]
            func epoch(_ time: String) -> Int64 {
                var calendar = Calendar(identifier: .gregorian)
                calendar.timeZone = TimeZone(identifier: "UTC")!
                let day = Int(date.prefix(2))!, month = Int(date.dropFirst(2).prefix(2))!, year = 2000 + Int(date.suffix(2))!
                let midnight = calendar.date(from: DateComponents(year: year, month: month, day: day))!
                let seconds = Double(time.prefix(2))! * 3600 + Double(time.dropFirst(2).prefix(2))! * 60 + Double(time.dropFirst(4))!
                return Int64((midnight.timeIntervalSince1970 + seconds) * 1000)
            }
            start = epoch(fields[0][1])
            firstFix = epoch(try #require(fields.first { $0[0].hasSuffix("RMC") && $0[2] == "A" })[1])
        }
    }

    func trigger(_ extra: [String], replay: String? = nil) async throws -> [String: Any] {
        let result = await geolocate.run(["trigger", "login", "--replay", replay ?? log, "--permission", "fine"] + extra)
        #expect(result.status == 0, "\(result.stderr)")
        return try result.json()
    }

    func times(_ record: [String: Any]) -> (triggeredAt: Int64?, fix: Int64?, age: Int64?) {
        let location = record["location"] as? [String: Any]
        return ((record["triggeredAt"] as? NSNumber)?.int64Value, (location?["recordTimestamp"] as? NSNumber)?.int64Value,
                (record["ageMs"] as? NSNumber)?.int64Value)
    }

    /// The rule every record keeps: a fix no later than triggeredAt, ageMs their difference.
    func expectConsistent(_ record: [String: Any], sourceLocation: SourceLocation = #_sourceLocation) {
        let (triggeredAt, fix, age) = times(record)
        #expect(triggeredAt != nil, sourceLocation: sourceLocation)
        if let fix, let triggeredAt {
            #expect(fix <= triggeredAt, "fix \(fix) later than triggeredAt \(triggeredAt)", sourceLocation: sourceLocation)
            #expect(age == triggeredAt - fix, "ageMs \(String(describing: age))", sourceLocation: sourceLocation)
        }
    }

    @Test func everyModeOnAReplayIsStampedWithTheLogsTime() async throws {
        let times = try LogTimes(log)
        #expect(times.firstFix - times.start == 8000, "the log starts with 8 s without a fix")
        // Modes that do not wait decide at the log's first epoch.
        for mode in ["disabled", "force-last-known", "last-known:5m"] {
            let record = try await trigger(["--mode", mode, "--timeout", "1500ms"])
            expectConsistent(record)
            let expected = mode == "last-known:5m" ? times.start + 1500 : times.start  // nothing known: waits as force-current
            #expect(self.times(record).triggeredAt == expected, "\(mode): \(record)")
        }
        // force-current decides at the end of its timeout, or when its fix arrives.
        let timedOut = try await trigger(["--mode", "force-current", "--timeout", "1500ms"])
        #expect(self.times(timedOut).triggeredAt == times.start + 1500)
        #expect(timedOut["fallbackReason"] as? String == "timeout")
        let current = try await trigger(["--mode", "force-current", "--timeout", "10s"])
        expectConsistent(current)
        #expect(self.times(current).triggeredAt == times.firstFix)
        #expect(self.times(current).fix == times.firstFix && self.times(current).age == 0)
        // Without permission, the time is still the log's.
        let denied = await geolocate.run(["trigger", "login", "--replay", log, "--permission", "none"])
        #expect((try denied.json()["triggeredAt"] as? NSNumber)?.int64Value == times.start)
    }

    /// A log joined to the next day's (the drive of 2026-11-21, then fixes of 2026-11-22): time
    /// follows the date forward, so no track record is earlier than its fix.
    @Test func aLogJoinedToTheNextDayKeepsEveryFixWithinItsRecord() async throws {
        let text = try [log, InProcessTrigger.fixture("gpsd-fixes.nmea")].map {
            try String(contentsOfFile: TestPaths.projectRoot.appendingPathComponent($0).path, encoding: .utf8)
        }.joined(separator: "\n")
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let joined = geolocate.home.appendingPathComponent("joined.nmea").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: joined))
        let track = await geolocate.run(["track", "--replay", joined, "--permission", "fine", "--stdout", "--no-spool", "--every-fix"])
        #expect(track.status == 0, "\(track.stderr)")
        let records = try track.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(records.count > 120)
        for record in records { expectConsistent(record) }
        // A fix a day later is no answer to a 10 s query.
        let trigger = try await trigger(["--mode", "force-current", "--timeout", "10s"], replay: joined)
        expectConsistent(trigger)
    }

    /// The state directory remembers the fix at 08:00:08; replayed again from 08:00:00, that fix
    /// is in the log's future and is never reported, in any mode. From 08:01:00 it is 52 s old.
    @Test func aRememberedFixIsNeverReportedBeforeItsTime() async throws {
        let times = try LogTimes(log)
        _ = try await trigger(["--mode", "force-current", "--timeout", "10s"])
        for mode in ["force-last-known", "last-known:5m", "force-current", "default"] {
            let record = try await trigger(["--mode", mode, "--timeout", "1500ms"])
            expectConsistent(record)
            #expect(record["location"] is NSNull, "\(mode) reported a fix from the log's future: \(record)")
        }
        let later = times.sentences.drop { !$0.hasPrefix("$GPGGA,080100") }
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let laterLog = geolocate.home.appendingPathComponent("from-0801.nmea").path
        try Data(later.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: laterLog))
        for mode in ["force-last-known", "last-known:5m"] {
            let record = try await trigger(["--mode", mode], replay: laterLog)
            expectConsistent(record)
            #expect(self.times(record).triggeredAt == times.start + 60_000)
            #expect(self.times(record).fix == times.firstFix && self.times(record).age == 52_000, "\(mode): \(record)")
            #expect(record["locationSource"] as? String == "last_known")
        }
    }
}
