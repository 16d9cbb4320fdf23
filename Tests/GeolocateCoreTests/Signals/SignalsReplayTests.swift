import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import Testing

/// SPEC §10.1 in this process (moved from SignalsEndToEndTests, which keeps processes
/// reporting at once): signals in trigger and track records, from replays, kept in the state
/// directory between runs, limited by privacy, through `Trigger.respond` and `Tracker.command`.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct SignalsReplayTests {
    let geolocate = InProcessTrigger()
    let drive = InProcessTrigger.example("maynooth-drive.nmea")
    let kiosk = InProcessTrigger.example("kiosk-gnss.nmea")

    func trigger(_ log: String, _ extra: [String] = []) async throws -> [String: Any] {
        let result = await geolocate.run(["trigger", "login", "--replay", log, "--permission", "fine", "--timeout", "10s"] + extra)
        #expect(result.status == 0, "\(result.stderr)")
        return try result.json()
    }

    func track(_ log: String, _ extra: [String] = []) async throws -> [[String: Any]] {
        let result = await geolocate.run(["track", "--replay", log, "--permission", "fine", "--every-fix", "--stdout", "--no-spool"] + extra)
        #expect(result.status == 0, "\(result.stderr)")
        return try result.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    static func signals(_ record: [String: Any]) -> [String: Any]? { record["signals"] as? [String: Any] }

    /// Metres on a sphere of the mean radius: within 0.5 % of the geodesic distance.
    static func haversine(_ a: (Double, Double), _ b: (Double, Double)) -> Double {
        let rad = Double.pi / 180
        let h = pow(sin((b.0 - a.0) * rad / 2), 2) + cos(a.0 * rad) * cos(b.0 * rad) * pow(sin((b.1 - a.1) * rad / 2), 2)
        return 2 * 6_371_008.8 * asin(h.squareRoot())
    }

    static func position(_ record: [String: Any]) throws -> (Double, Double) {
        let location = try #require(record["location"] as? [String: Any])
        return (Double(try #require(location["latitude"] as? String))!, Double(try #require(location["longitude"] as? String))!)
    }

    @Test func aLoginInAnotherCountryHoursLaterChangesCountryWithoutJumping() async throws {
        let first = try await trigger(drive)  // Maynooth, 2026-11-21 08:00:08Z
        #expect(Self.signals(first)?["previous"] is NSNull)
        let second = try await trigger(kiosk)  // Lyon, 14:30:00Z the same day
        let signals = try #require(Self.signals(second))
        let previous = try #require(signals["previous"] as? [String: Any])
        let firstLocation = try #require(first["location"] as? [String: Any])
        #expect(previous["recordTimestamp"] as? Int == firstLocation["recordTimestamp"] as? Int)
        #expect(previous["countryCode"] as? String == "IE")
        let distanceText = try #require(previous["distance"] as? String)
        let distance = try #require(Double(distanceText))
        let expected = Self.haversine(try Self.position(first), try Self.position(second))
        #expect(abs(distance - expected) / expected < 0.005, "\(distance) against \(expected)")
        let elapsed: Double = 6 * 3600 + 29 * 60 + 52
        let impliedSpeed = try #require(signals["impliedSpeed"] as? String)
        #expect(abs(Double(impliedSpeed)! - distance / elapsed) < 0.1)
        #expect(signals["countryChanged"] as? Bool == true)
        #expect(signals["jumped"] as? Bool == false)
        #expect(signals["replayed"] as? Bool == true && signals["clockSkewMs"] is NSNull)
        #expect(signals["reasons"] as? [String] == ["countryChanged: IE -> FR within 24 h", "replayed: the fix comes from an NMEA replay"])
    }

    @Test func aLoginEarlierAndFarAwayJumps() async throws {
        _ = try await trigger(kiosk)
        let signals = try #require(Self.signals(try await trigger(drive)))
        // The Maynooth fix is dated 6 h before the Lyon one: no time at all for 1,175 km, and
        // the reason says the time went back.
        #expect(signals["jumped"] as? Bool == true && signals["impliedSpeed"] is NSNull)
        #expect((signals["reasons"] as? [String])?.first == "jumped: 1175 km while the time went back 6 h (limit 300 m/s)")
    }

    @Test func liveAndReplayedReportsAreKeptApart() async throws {
        _ = try await trigger(drive)
        #expect(FileManager.default.fileExists(atPath: geolocate.stateDirectory + "/previous-report-replay.json"))
        #expect(!FileManager.default.fileExists(atPath: geolocate.stateDirectory + "/previous-report.json"))
    }

    @Test func belowGPSLocationOnlyTheBooleansAndCountriesStay() async throws {
        #expect(await geolocate.run(["config", "set", "privacy.precision", "COUNTRY"]).status == 0)
        _ = try await trigger(drive)
        let signals = try #require(Self.signals(try await trigger(kiosk)))
        let previous = try #require(signals["previous"] as? [String: Any])
        #expect(previous["distance"] == nil && previous["countryCode"] as? String == "IE")
        #expect(signals["impliedSpeed"] is NSNull)
        #expect(signals["countryChanged"] as? Bool == true)
        let reasons = try #require(signals["reasons"] as? [String])
        #expect(reasons.count == 2 && reasons.allSatisfy { !$0.contains(where: \.isNumber) })
    }

    @Test func switchedOffThereIsNoSignalsKey() async throws {
        #expect(await geolocate.run(["config", "set", "signals.enabled", "false"]).status == 0)
        #expect(try await trigger(drive)["signals"] == nil)
        #expect(try await track(drive, ["--count", "2"]).allSatisfy { $0["signals"] == nil })
    }

    @Test func thresholdsAreValidatedLikeEveryKey() async throws {
        for (key, value) in [("signals.maxSpeed", "0"), ("signals.maxSpeed", "fast"), ("signals.countryWindow", "0s"),
                             ("signals.minCn0StdDev", "-1"), ("signals.staleAfter", "10"), ("signals.enabled", "maybe")] {
            let result = await geolocate.run(["config", "set", key, value])
            #expect(result.status == 64, "\(key) \(value): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1)
        }
        #expect(await geolocate.run(["config", "set", "signals.maxSpeed", "50"]).status == 0)
        // 12 m/s is no jump at 300 m/s, but Maynooth to Lyon in 6.5 h (44 m/s) is one at 20 m/s.
        #expect(await geolocate.run(["config", "set", "signals.maxSpeed", "20"]).status == 0)
        _ = try await trigger(drive)
        #expect(Self.signals(try await trigger(kiosk))?["jumped"] as? Bool == true)
    }

    @Test func trackComparesEachRecordWithTheOneBefore() async throws {
        let records = try await track(drive, ["--count", "5"])
        #expect(records.count == 5)
        for (before, record) in zip(records, records.dropFirst()) {
            let signals = try #require(Self.signals(record))
            let previous = try #require(signals["previous"] as? [String: Any])
            let location = try #require(before["location"] as? [String: Any])
            #expect(previous["recordTimestamp"] as? Int == location["recordTimestamp"] as? Int)
            let distance = Double(try #require(previous["distance"] as? String))!
            let expected = Self.haversine(try Self.position(before), try Self.position(record))
            #expect(abs(distance - expected) <= max(0.1, expected * 0.005))
            #expect(signals["jumped"] as? Bool == false)
        }
        // The last record of the run is the next run's previous report.
        let next = try #require(Self.signals(try await trigger(drive))?["previous"] as? [String: Any])
        let last = try #require(records.last?["location"] as? [String: Any])
        #expect(next["recordTimestamp"] as? Int == last["recordTimestamp"] as? Int)
    }

    @Test func openLocateCarriesSignalsInEachLocation() async throws {
        let result = await geolocate.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--timeout", "10s",
                                        "--format", "openlocate"])
        let signals = try #require(try result.json()["signals"] as? [String: Any])
        #expect(signals["spoofing_suspected"] as? Bool == false && signals["replayed"] as? Bool == true)
        let satellites = try #require(signals["satellites"] as? [String: Any])
        #expect(satellites["used"] as? Int == 12 && satellites["cn0_mean"] is Double)
    }

    /// A report stamped in the future (a clock that was once ahead), or one too large to be
    /// ours, is ignored and replaced, never compared with.
    @Test func aHostilePreviousReportIsReplaced() async throws {
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        let path = geolocate.stateDirectory + "/previous-report-replay.json"
        let future = #"{"accuracy":1,"countryCode":"US","latitude":40,"longitude":-74,"madeAt":9000000000000000000,"recordTimestamp":1795248000000}"#
        try future.write(toFile: path, atomically: true, encoding: .utf8)
        let first = try #require(Self.signals(try await trigger(drive)))
        #expect(first["previous"] is NSNull && first["jumped"] as? Bool == false)
        #expect(Self.signals(try await trigger(drive))?["previous"] is [String: Any])
        try Data(count: 2 * 1024 * 1024).write(to: URL(fileURLWithPath: path))
        let result = await geolocate.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--timeout", "10s"])
        #expect(try result.json()["signals"].flatMap { ($0 as? [String: Any])?["previous"] } is NSNull)
        #expect(result.stderr.contains("previous-report-replay.json cannot be read"), "\(result.stderr)")
    }
}
