import Foundation
import Testing

/// Signals from a real gpsd (gpsfake): the satellites of its SKY reports, compared with what
/// `gpspipe -w` printed, and the clock skew of a live fix.
@Suite(.serialized) struct SignalsGPSDTests {
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

    @Test func satellitesAndClockSkewOfALiveFix() throws {
        try withSteadyGPSD { fake, pipe, _ in
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
            let skew = Int64(try #require(signals["clockSkewMs"] as? Int))
            #expect(skew >= before - fixTime && skew <= after - fixTime)
            #expect(signals["replayed"] as? Bool == true)
            #expect((signals["reasons"] as? [String])?.contains { $0.hasPrefix("replayed: the fix's time was") } == true)

            let satellites = try #require(signals["satellites"] as? [String: Any])
            let skies = pipe.reports(ofClass: "SKY").compactMap(Self.summary)
            #expect(!skies.isEmpty)
            let ours = (satellites["used"] as? Int, satellites["cn0Mean"] as? String, satellites["cn0StdDev"] as? String)
            #expect(skies.contains { $0.used == ours.0 && $0.mean == ours.1 && $0.deviation == ours.2 },
                    "ours \(ours), gpsd's \(skies.map { "\($0)" }.joined(separator: "; "))")
            #expect(signals["spoofingSuspected"] as? Bool == false)
        }
    }

    @Test func aLastKnownFixHasNoClockSkew() throws {
        try withSteadyGPSD { fake, _, _ in
            let result = try geolocate.run(["trigger", "logout", "--source", fake.source, "--permission", "fine"])
            let record = try result.json()
            #expect(record["locationSource"] as? String == "last_known", "\(result.stderr)")
            let signals = try #require(record["signals"] as? [String: Any])
            #expect(signals["clockSkewMs"] is NSNull)
            #expect(signals["satellites"] is [String: Any])
        }
    }

    @Test func aPolicyOnALiveFix() throws {
        // The fixture's receiver sits at 53.36134 N, 6.50562 W: inside a 1 km circle around it.
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let zones = geolocate.home.appendingPathComponent("zones.geojson").path
        try #"{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"name":"site","radius":1000},"geometry":{"type":"Point","coordinates":[-6.50562,53.36134]}}]}"#
            .write(toFile: zones, atomically: true, encoding: .utf8)
        #expect(try geolocate.run(["config", "set", "policy.zones", zones]).status == 0)
        try withSteadyGPSD { fake, _, _ in
            let result = try geolocate.run(["trigger", "login", "--source", fake.source, "--permission", "fine",
                                            "--mode", "force-current", "--timeout", "10s", "--enforce"])
            #expect(result.status == 0, "\(result.stderr)")
            let policy = try #require(try result.json()["policy"] as? [String: Any])
            #expect(policy["decision"] as? String == "allow" && policy["zone"] as? String == "site")
        }
    }
}
