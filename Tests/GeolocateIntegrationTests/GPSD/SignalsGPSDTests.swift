import Foundation
import Testing

/// Signals from a real gpsd (gpsfake): the satellites of its SKY reports, compared with what
/// `gpspipe -w` printed, and the clock skew of a live fix.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct SignalsGPSDTests {
    let geolocate = GeolocateProcess()

    /// The figures of one SKY report, computed here from its satellite list: the number used,
    /// and the mean and population deviation of the `ss` of those used, to one decimal.
    static func summary(ofSky sky: [String: Any]) -> (used: Int, mean: String, deviation: String)? {
        guard let satellites = sky["satellites"] as? [[String: Any]] else { return nil }
        let used = satellites.filter { $0["used"] as? Bool == true }
        let strengths = used.compactMap { ($0["ss"] as? NSNumber)?.doubleValue }.filter { $0 > 0 }
        guard !strengths.isEmpty else { return nil }
        let mean = strengths.reduce(0, +) / Double(strengths.count)
        let variance = strengths.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(strengths.count)
        return (used.count, String(format: "%.1f", mean), String(format: "%.1f", variance.squareRoot()))
    }

    /// The figures of every view gpsd may answer `?POLL;` with while it fills one SKY in, a GSV
    /// sentence of four satellites at a time: the report's list cut after 4, 8, … satellites.
    static func summaries(ofViewsFilling sky: [String: Any]) -> [(used: Int, mean: String, deviation: String)] {
        guard let satellites = sky["satellites"] as? [[String: Any]] else { return [] }
        return stride(from: 4, through: satellites.count + 3, by: 4).compactMap {
            summary(ofSky: ["satellites": Array(satellites.prefix($0))])
        }
    }

    /// A live fix's clock skew, and its satellites as gpsd's SKY reports give them. gpsd answers
    /// `?POLL;` with the skyview it is still filling, one GSV sentence (four satellites) at a
    /// time: the view a fix carries is a SKY gpsd printed or one on its way to it, never fewer
    /// satellites than a 3D fix needs (such a fix carries none, so the trigger is asked again).
    @Test func satellitesAndClockSkewOfALiveFix() throws {
        try withSteadyGPSD { fake, pipe, _ in
            var carriedSatellites = false
            // A trigger asked again may get the fix the one before remembered, which then ages
            // from its first arrival: no earlier than the first trigger began.
            let first = Int64(Date().timeIntervalSince1970 * 1000)
            for _ in 1...5 where !carriedSatellites {
                let before = Int64(Date().timeIntervalSince1970 * 1000)
                let result = try geolocate.run(["trigger", "login", "--source", fake.source, "--permission", "fine",
                                                "--mode", "force-current", "--timeout", "10s"])
                let after = Int64(Date().timeIntervalSince1970 * 1000)
                #expect(result.status == 0, "\(result.stderr)")
                let record = try result.json()
                let signals = try #require(record["signals"] as? [String: Any])
                let location = try #require(record["location"] as? [String: Any])
                let fixTime = Int64(try #require(location["recordTimestamp"] as? Int))

                // gpsfake replays a log of 2026-11-22: the fix arrives days behind the system clock.
                // It is a live fix (not replayed), aged from its arrival; the skew counts against it
                // only when the system clock is synchronised (SPEC §10.1).
                let skew = Int64(try #require(signals["clockSkewMs"] as? Int))
                #expect(skew >= before - fixTime && skew <= after - fixTime)
                #expect(signals["replayed"] as? Bool == false)
                // The age counts from the fix's arrival, within the runs; 1 ms for two clocks' rounding.
                #expect((record["ageMs"] as? Int).map { $0 >= 0 && Int64($0) <= after - first + 1 } == true, "\(record)")
                let synchronized = try Tool.systemClockIsSynchronized()
                #expect(signals["systemClockSynchronized"] as? Bool == synchronized)
                #expect(signals["clockSkewed"] as? Bool == synchronized)
                #expect((signals["reasons"] as? [String])?.contains { $0.hasPrefix("clockSkewed: the fix's time was") } == synchronized)
                // Days off the system clock: said once on stderr.
                #expect(result.stderr.contains("dates its fixes 2026-11-22") && result.stderr.contains("their ages count from their arrival"), "\(result.stderr)")
                #expect(signals["spoofingSuspected"] as? Bool == false)

                guard let satellites = signals["satellites"] as? [String: Any] else { continue }
                carriedSatellites = true
                let reports = pipe.reports(ofClass: "SKY")
                #expect(!reports.isEmpty)
                let ours = (satellites["used"] as? Int, satellites["cn0Mean"] as? String, satellites["cn0StdDev"] as? String)
                #expect((ours.0 ?? 0) >= 4, "a 3D fix from fewer than 4 satellites: a view gpsd was still filling")
                let views = reports.flatMap(Self.summaries(ofViewsFilling:))
                #expect(views.contains { $0.used == ours.0 && $0.mean == ours.1 && $0.deviation == ours.2 },
                        "ours \(ours), gpsd's \(reports.compactMap(Self.summary).map { "\($0)" }.joined(separator: "; "))")
            }
            #expect(carriedSatellites, "five triggers in a row took gpsd's skyview while it was being filled")
        }
    }

    /// A fix gpsd held keeps the skew it had when asked (SPEC §10.1). gpsfake's log is dated
    /// more than a day before the system clock, so its time says nothing of its age, and
    /// geolocate did not see it arrive: its age is unknown (SPEC §3), `ageMs` null, unless an
    /// earlier trigger saw it streamed.
    @Test func aLastKnownFixKeepsItsClockSkew() throws {
        try withSteadyGPSD { fake, _, _ in
            // gpsd answers ?POLL; with the sky view it is still filling (4 satellites a GSV), which
            // counts only once it holds the satellites its fix needs: ask again, up to 5 times,
            // until one answer carries it (each answer is checked whole).
            var satellites: Any?
            // An answer asked again may be the fix the one before remembered, aging from its
            // first arrival: no earlier than the first trigger began.
            let first = Int64(Date().timeIntervalSince1970 * 1000)
            for _ in 0..<5 where !(satellites is [String: Any]) {
                let before = Int64(Date().timeIntervalSince1970 * 1000)
                let result = try geolocate.run(["trigger", "logout", "--source", fake.source, "--permission", "fine"])
                let after = Int64(Date().timeIntervalSince1970 * 1000)
                let record = try result.json()
                #expect(record["locationSource"] as? String == "last_known", "\(result.stderr)")
                let fixTime = Int64(try #require((record["location"] as? [String: Any])?["recordTimestamp"] as? Int))
                let signals = try #require(record["signals"] as? [String: Any])
                let skew = Int64(try #require(signals["clockSkewMs"] as? Int))
                #expect(skew >= before - fixTime && skew <= after - fixTime)
                #expect(before - fixTime > 86_400_000, "the fixture is dated more than a day back")
                if let age = record["ageMs"] as? Int {
                    #expect(age >= 0 && Int64(age) <= after - first, "\(age)")
                } else {
                    #expect(record["ageMs"] is NSNull, "\(record)")
                }
                satellites = signals["satellites"]
                #expect(satellites is [String: Any] || satellites is NSNull, "\(satellites ?? "none")")
            }
            #expect(satellites is [String: Any], "no answer of 5 carried a complete sky view")
        }
    }

    @Test func aPolicyOnALiveFix() throws {
        // The fixture's receiver sits at 53.36134 N, 6.50562 W: inside a 1 km circle around it.
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let zones = geolocate.home.appendingPathComponent("zones.geojson").path
        try #"{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"name":"site","radius":1000},"geometry":{"type":"Point","coordinates":[-6.50562,53.36134]}}]}"#
            .write(toFile: zones, atomically: true, encoding: .utf8)
        #expect(try geolocate.run(["config", "set", "policy.zones", zones]).status == 0)
        // gpsfake's fixes are days behind the system clock: against a synchronised clock that
        // is clockSkewed, which policy.distrust denies by default, whatever the zones say.
        let synchronized = try Tool.systemClockIsSynchronized()
        try withSteadyGPSD { fake, _, _ in
            let result = try geolocate.run(["trigger", "login", "--source", fake.source, "--permission", "fine",
                                            "--mode", "force-current", "--timeout", "10s", "--enforce"])
            #expect(result.status == (synchronized ? 4 : 0), "\(result.stderr)")
            let policy = try #require(try result.json()["policy"] as? [String: Any])
            if synchronized {
                #expect(policy["decision"] as? String == "deny" && (policy["reason"] as? String)?.hasPrefix("clockSkewed") == true)
            } else {
                #expect(policy["decision"] as? String == "allow" && policy["zone"] as? String == "site")
            }
            // Without clockSkewed among the distrusted signals, the zone decides either way.
            #expect(try geolocate.run(["config", "set", "policy.distrust", "jumped,spoofingSuspected"]).status == 0)
            let zoned = try geolocate.run(["trigger", "login", "--source", fake.source, "--permission", "fine",
                                           "--mode", "force-current", "--timeout", "10s", "--enforce"])
            let decided = try #require(try zoned.json()["policy"] as? [String: Any])
            #expect(zoned.status == 0 && decided["decision"] as? String == "allow" && decided["zone"] as? String == "site", "\(zoned.stderr)")
        }
    }
}
