import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import TestSupport
import Testing

/// SPEC §3 and §10.2 on replays in this process (moved from SafeDecisionEndToEndTests, which
/// keeps the example hooks, gpsd, FIFOs and the spoofed log made by a Python tool): under a
/// policy the source is asked first; a query time after the log or a log whose time goes
/// back never makes an old fix current; estimated positions are distrusted; an empty
/// policy.distrust is refused; a relative policy.zones is the config file's own.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct SafeDecisionReplayTests {
    /// The kiosk of `Examples/nmea/kiosk-gnss.nmea`, inside lyon-office of the example zones.
    static let lyon = (latitude: 45.7640, longitude: 4.8357)

    func write(_ text: String, in geolocate: InProcessTrigger, name: String) throws -> String {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let path = geolocate.home.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// SPEC §3: under a policy, last-known:N longer than policy.maxAge asks the source first,
    /// so the decision rests on the fresh fix, not on one remembered ten minutes ago.
    @Test func underAPolicyLastKnownAsksTheSourceFirst() async throws {
        let geolocate = InProcessTrigger()
        let earlier = try write(NMEAText.fixes(latitude: Self.lyon.latitude, longitude: Self.lyon.longitude, date: "211126", time: "120000"),
                                in: geolocate, name: "earlier.nmea")
        #expect(await geolocate.run(["trigger", "login", "--replay", earlier, "--permission", "fine"]).status == 0)
        let later = try write(NMEAText.noFix(date: "211126", time: "121000", seconds: 3)
                                + NMEAText.fixes(latitude: Self.lyon.latitude, longitude: Self.lyon.longitude, date: "211126", time: "121003"),
                              in: geolocate, name: "later.nmea")
        let plain = await geolocate.run(["trigger", "login", "--replay", later, "--permission", "fine", "--mode", "last-known:60"])
        #expect(try plain.json()["locationSource"] as? String == "last_known", "\(plain.stderr)")
        let gated = await geolocate.run(["trigger", "login", "--replay", later, "--permission", "fine", "--mode", "last-known:60", "--enforce",
                                         "--timeout", "10s"])
        let record = try gated.json()
        #expect(gated.status == 0 && record["locationSource"] as? String == "current", "\(gated.stderr)")
        #expect(record["collectionMode"] as? String == "last-known:5m")
    }

    /// B.6: `--now` ten minutes after the log's fixes never makes one of them current.
    @Test func aQueryTimeAfterTheLogMakesNoFixCurrent() async throws {
        let geolocate = InProcessTrigger()
        let log = try write(NMEAText.fixes(latitude: Self.lyon.latitude, longitude: Self.lyon.longitude, date: "211126", time: "120000", seconds: 20),
                            in: geolocate, name: "lyon.nmea")
        for now in ["2026-11-21T12:10:00Z", "2026-12-21T12:00:00Z"] {
            let result = await geolocate.run(["trigger", "login", "--replay", log, "--permission", "fine", "--mode", "last-known:30s",
                                              "--now", now, "--timeout", "5s"])
            let record = try result.json()
            #expect(record["locationSource"] as? String != "current", "\(now): \(record)")
            if let age = record["ageMs"] as? Int, record["locationSource"] as? String == "last_known" {
                #expect(age >= 590_000 && record["fallbackReason"] as? String == "timeout")
            }
        }
    }

    /// B.6: a log whose time goes back an hour: the older fixes after the step are not current.
    @Test func aLogWhoseTimeGoesBackMakesNoOldFixCurrent() async throws {
        let geolocate = InProcessTrigger()
        let text = NMEAText.noFix(date: "211126", time: "120000", seconds: 2)
            + NMEAText.fixes(latitude: Self.lyon.latitude, longitude: Self.lyon.longitude, date: "211126", time: "110002", seconds: 5)
        let log = try write(text, in: geolocate, name: "back.nmea")
        let result = await geolocate.run(["trigger", "login", "--replay", log, "--permission", "fine", "--timeout", "3s"])
        let record = try result.json()
        #expect(record["locationSource"] as? String == "last_known" && record["fallbackReason"] as? String == "timeout", "\(record)")
        let age = try #require(record["ageMs"] as? Int)
        #expect(age > 3_590_000, "\(age)")
        #expect(result.stderr.contains("so it is not current"), "\(result.stderr)")
    }

    /// Estimated, manual and simulated positions from GGA, GNS, RMC and GLL are no proof of
    /// presence; the record says which the receiver gave.
    @Test(arguments: [
        ("GNS modes EE", "GNGNS,143000.00,4545.84000,N,00450.14200,E,EE,10,0.9,545.4,11.0,,", "estimated"),
        ("GNS modes SS", "GNGNS,143000.00,4545.84000,N,00450.14200,E,SS,10,0.9,545.4,11.0,,", "simulator"),
        ("GGA quality 8", "GPGGA,143000.00,4545.84000,N,00450.14200,E,8,10,0.9,545.4,M,11.0,M,,", "simulator"),
        ("GGA quality 7", "GPGGA,143000.00,4545.84000,N,00450.14200,E,7,10,0.9,545.4,M,11.0,M,,", "manual"),
        ("RMC mode M", "GPRMC,143000.00,A,4545.84000,N,00450.14200,E,0.0,0.0,211126,,,M", "manual"),
        ("GLL mode E", "GPGLL,4545.84000,N,00450.14200,E,143000.00,A,E", "estimated"),
    ]) func estimatedPositionsAreDistrusted(_ kind: String, _ body: String, _ quality: String) async throws {
        let geolocate = InProcessTrigger()
        let date = NMEAText.sentence("GPZDA,143000.00,21,11,2026,00,00")
        let log = try write(date + NMEAText.sentence(body) + NMEAText.noFix(date: "211126", time: "143001", seconds: 2), in: geolocate, name: "estimated.nmea")
        let result = await geolocate.run(["trigger", "login", "--replay", log, "--permission", "fine", "--enforce", "--timeout", "5s"])
        let record = try result.json()
        #expect(result.status == 4, "\(kind): \(record) \(result.stderr)")
        #expect((record["signals"] as? [String: Any])?["estimatedFix"] as? Bool == true, "\(kind): \(record)")
        #expect((record["location"] as? [String: Any])?["fixQuality"] as? String == quality, "\(kind): \(record)")
        // A replayed simulator log is a test, not an attack on this device.
        #expect((record["signals"] as? [String: Any])?["spoofingSuspected"] as? Bool == false, "\(kind): \(record)")
    }

    /// An empty policy.distrust (an unset shell variable) must not turn the gate off: only
    /// `none` or `[]` does.
    @Test func anEmptyDistrustIsRefused() async throws {
        let geolocate = InProcessTrigger()
        for value in ["", ",,", " "] {
            let result = await geolocate.run(["config", "set", "policy.distrust", value])
            #expect(result.status == 64 && result.stderr.contains("say none"), "'\(value)': \(result.stderr)")
        }
        #expect(await geolocate.run(["config", "set", "policy.distrust", "jumped,jumped,clockSkewed"]).status == 0)
        let shown = await geolocate.run(["config", "get", "policy.distrust"]).stdout
        #expect(shown.contains("jumped, clockSkewed") || shown.filter { $0 == "j" }.count == 1)
        #expect(await geolocate.run(["config", "set", "policy.distrust", "[]"]).status == 0)
    }

    /// SPEC §10.2: a relative policy.zones is taken from the config file's directory, never
    /// from the working directory (the tests run in the project's root).
    @Test func aRelativeZonesPathIsTheConfigFilesOwn() async throws {
        let geolocate = InProcessTrigger()
        _ = try write(#"{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"name":"kiosk","radius":1000},"geometry":{"type":"Point","coordinates":[4.8357,45.764]}}]}"#,
                      in: geolocate, name: "zones.geojson")
        _ = try write(#"{"permissions":["fine"],"policy":{"zones":"zones.geojson"}}"#, in: geolocate, name: "config.json")
        #expect(await geolocate.run(["config", "validate"]).status == 0)
        let result = await geolocate.run(["trigger", "login", "--replay", InProcessTrigger.example("kiosk-gnss.nmea"), "--enforce", "--timeout", "10s"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect((try result.json()["policy"] as? [String: Any])?["zone"] as? String == "kiosk")
    }
}
