import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Testing

/// The pieces of a track policy on their own: GeoManager ranges, windows, accuracy levels,
/// the interval-or-distance rule and stay detection.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct TrackPolicyTests {
    let utc = TimeZone(identifier: "UTC")!

    func fix(_ seconds: Int64, north metres: Double = 0, accuracy: Double? = 5) -> Fix {
        Fix(timestamp: 1_795_348_800_000 + seconds * 1000, latitude: 53 + metres / 111_195, longitude: -6,
            mode: .threeD, horizontalAccuracy: accuracy, provider: .nmeaReplay)
    }

    @Test func geoManagerRangesFallBackToDefaultsWithAWarning() {
        #expect(TrackPolicy.checkedInterval(60_000) == (60_000, nil))
        #expect(TrackPolicy.checkedInterval(1_800_000) == (1_800_000, nil))
        let short = TrackPolicy.checkedInterval(59_000)
        #expect(short.value == 300_000 && short.warning?.contains("59s") == true)
        #expect(TrackPolicy.checkedInterval(1_801_000).value == 300_000)
        #expect(TrackPolicy.checkedDistance(200) == (200, nil))
        #expect(TrackPolicy.checkedDistance(500) == (500, nil))
        #expect(TrackPolicy.checkedDistance(199).value == 300)
        #expect(TrackPolicy.checkedDistance(501).warning != nil)
    }

    @Test func windowsIncludeBothEndMinutesAndMayCrossMidnight() throws {
        let day = try CollectionWindow(parsing: "08:00-18:30")
        let midnight: Int64 = 1_795_305_600_000  // 2026-11-22T00:00:00Z
        func at(_ hour: Int64, _ minute: Int64, _ second: Int64 = 0) -> Int64 { midnight + (hour * 3600 + minute * 60 + second) * 1000 }
        #expect(!day.contains(at(7, 59, 59), in: utc))
        #expect(day.contains(at(8, 0), in: utc))
        #expect(day.contains(at(18, 30, 59), in: utc))
        #expect(!day.contains(at(18, 31), in: utc))

        let night = try CollectionWindow(parsing: "22:00-06:00")
        #expect(night.contains(at(23, 0), in: utc) && night.contains(at(0, 30), in: utc) && night.contains(at(6, 0), in: utc))
        #expect(!night.contains(at(12, 0), in: utc) && !night.contains(at(21, 59), in: utc))

        // Local time: 08:00 in Dublin in winter is 08:00 UTC, in Tokyo it is 23:00 UTC the day before.
        let tokyo = try #require(TimeZone(identifier: "Asia/Tokyo"))
        #expect(day.contains(at(0, 0), in: tokyo))  // 09:00 in Tokyo
        #expect(!day.contains(at(12, 0), in: tokyo))  // 21:00 in Tokyo
        #expect(CollectionWindow.allDay.contains(at(23, 59, 59), in: utc))
    }

    @Test(arguments: ["8:00-18:00", "08:00", "08:00-24:00", "08:60-09:00", "aa:bb-cc:dd", ""])
    func invalidWindows(_ text: String) {
        #expect(throws: GeolocateError.self) { try CollectionWindow(parsing: text) }
    }

    @Test func accuracyLevelsDropWorseAndUnknownFixes() {
        #expect(AccuracyLevel.best.accepts(fix(0, accuracy: nil)))
        #expect(AccuracyLevel.best.accepts(fix(0, accuracy: 5000)))
        #expect(AccuracyLevel.tenMetres.accepts(fix(0, accuracy: 10)))
        #expect(!AccuracyLevel.tenMetres.accepts(fix(0, accuracy: 10.1)))
        #expect(!AccuracyLevel.threeKilometres.accepts(fix(0, accuracy: nil)))
        #expect(AccuracyLevel.kilometre.accepts(fix(0, accuracy: 999)))
    }

    @Test func intervalOrDistanceFromTheLastRecord() {
        var policy = TrackPolicy()
        policy.intervalMilliseconds = 60_000
        policy.distanceMetres = 200
        var filter = EmissionFilter(policy: policy)
        #expect(filter.isDue(fix(0)))
        filter.emitted(fix(0))
        #expect(!filter.isDue(fix(59, north: 199)))
        #expect(filter.isDue(fix(60, north: 0)))
        #expect(filter.isDue(fix(10, north: 201)))
        filter.emitted(fix(10, north: 201))
        #expect(!filter.isDue(fix(69, north: 300)))  // 99 m and 59 s from the last record

        policy.everyFix = true
        let everyFix = EmissionFilter(policy: policy)
        #expect(everyFix.isDue(fix(1)))
    }

    @Test func aStayBecomesAVisitAfterItsDurationAndEndsOutsideTheRadius() {
        var detector = VisitDetector(settings: VisitSettings(radiusMetres: 200, minDurationMilliseconds: 600_000))
        var events: [Int64: LocationContext] = [:]
        var seconds: Int64 = 0
        func observe(_ north: Double) {
            if let event = detector.observe(fix(seconds, north: north)) { events[seconds] = event }
            seconds += 60
        }
        for step in 0..<5 { observe(Double(step) * 500) }   // driving: 500 m a minute
        for _ in 0..<15 { observe(2150) }                   // 15 minutes within 150 m of the last
        for step in 1...3 { observe(2000 + Double(step) * 500) }
        // The stay is anchored at 2000 m (minute 4); its 10 minutes are up at minute 14;
        // the first fix beyond 200 m of the anchor (minute 20, 2500 m) ends it.
        #expect(events == [14 * 60: .visitEntry, 20 * 60: .visitExit])
    }
}
