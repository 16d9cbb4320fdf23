import Foundation
@testable import GeolocateConfig
@testable import GeolocateCore
@testable import GeolocateDelivery
@testable import GeolocateModel
@testable import GeolocateSpool
import Testing

/// The street geocoder against a real HTTP server on 127.0.0.1 answering as Nominatim does
/// (`collector.py`): street and number in the record, the disk cache, the throttle, and
/// errorCode 1053 when it fails, with the record still printed.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct GeocoderEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")
    let kiosk = GeolocateProcess.example("kiosk-gnss.nmea")
    /// The drive log's first fix, and an address at it.
    nonisolated(unsafe) static let places: [[String: Any]] = [
        ["lat": 53.36134, "lon": -6.50562, "road": "Straffan Road", "house_number": "12", "city": "Maynooth", "country_code": "ie"],
    ]

    func configure(_ settings: [(String, String)]) throws {
        for (key, value) in [("permissions", "fine")] + settings {
            let result = try geolocate.run(["config", "set", key, value])
            try #require(result.status == 0, "\(result.stderr)")
        }
    }

    func trigger(_ replay: String, _ extra: [String] = []) throws -> GeolocateProcess.Result {
        try geolocate.run(["trigger", "login", "--replay", replay, "--timeout", "10s"] + extra)
    }

    @Test func streetFromTheServerThenFromTheCacheAndTheThrottleHolds() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/reverse": ["places": Self.places]])
        try configure([("geocoder.url", collector.url("/"))])

        let first = try trigger(drive)
        #expect(first.status == 0, "\(first.stderr)")
        let location = try #require(try first.json()["location"] as? [String: Any])
        #expect(location["street"] as? String == "Straffan Road")
        #expect(location["streetNumber"] as? String == "12")
        #expect(location["countryCode"] as? String == "IE")
        #expect(location["latitude"] as? String == "53.3613367")
        #expect(try first.json()["errorCode"] as? Int == 0)
        let requests = collector.requests("/reverse")
        try #require(requests.count == 1)
        #expect(requests[0].query["format"] == "jsonv2")
        #expect(requests[0].query["lat"] == "53.3613367")
        #expect(requests[0].query["lon"] == "-6.5056200")
        #expect(requests[0].headers["User-Agent"]?.hasPrefix("geolocate/") == true)

        // The same cell again, in another format: from the cache, no request.
        let second = try trigger(drive, ["--format", "veridium"])
        let veridium = try second.json()
        #expect(veridium["street"] as? String == "Straffan Road")
        #expect(veridium["streetNumber"] as? String == "12")
        #expect((veridium["coordinates"] as? [String: Any])?["latitude"] as? Double == 53.3613367)
        #expect(veridium["errorCode"] as? Int == 0)
        #expect(collector.requests("/reverse").count == 1)

        // Another cell within geocoder.minInterval (60 s): not asked; 1053, the record still out.
        let third = try trigger(kiosk, ["--format", "veridium"])
        #expect(third.status == 0)
        let throttled = try third.json()
        #expect(throttled["errorCode"] as? Int == 1053)
        #expect(throttled["street"] is NSNull)
        #expect(throttled["city"] as? String == "Lyon")
        #expect((throttled["coordinates"] as? [String: Any])?["latitude"] as? Double == 45.764)
        #expect(third.stderr.contains("geocoder.minInterval"))
        #expect(collector.requests("/reverse").count == 1)
    }

    /// An `https://` geocoder behind a private CA (SPEC §14): without `geocoder.caFile` its
    /// certificate is not trusted, which is a geocoder failure said plainly (1053, the record
    /// still out); with it, the street arrives.
    @Test func anHTTPSGeocoderBehindAPrivateCANeedsItsCAFile() throws {
        let pki = try TestCertificates()
        let collector = try Collector(tls: pki.server())
        defer { collector.stop() }
        try collector.script(["/reverse": ["places": Self.places]])
        try configure([("geocoder.url", collector.url("/")), ("geocoder.minInterval", "0s")])

        let untrusted = try trigger(drive)
        #expect(untrusted.status == 0, "\(untrusted.stderr)")
        #expect(try untrusted.json()["errorCode"] as? Int == 1053)
        #expect(untrusted.stderr.contains("TLS certificate not trusted (set geocoder.caFile to the CA that signed it)"), "\(untrusted.stderr)")
        #expect(!untrusted.stderr.contains("NIOSSL") && !untrusted.stderr.contains(".build"), "\(untrusted.stderr)")
        #expect(collector.requests("/reverse").isEmpty)

        try configure([("geocoder.caFile", pki.path("ca.crt"))])
        let validated = try geolocate.run(["config", "validate"])
        #expect(validated.status == 0, "\(validated.stderr)")
        let trusted = try trigger(drive)
        #expect(trusted.status == 0, "\(trusted.stderr)")
        let location = try #require(try trusted.json()["location"] as? [String: Any])
        #expect(location["street"] as? String == "Straffan Road")
        #expect(try trusted.json()["errorCode"] as? Int == 0)
        #expect(collector.requests("/reverse").count == 1)

        // A CA file that cannot be read is said by config validate, naming the key.
        try configure([("geocoder.caFile", pki.path("no-such-ca.crt"))])
        let missing = try geolocate.run(["config", "validate"])
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("geocoder.caFile \(pki.path("no-such-ca.crt")) does not exist"), "\(missing.stderr)")
    }

    /// A base URL with a path and its own query (an API key): `/reverse` goes after the path,
    /// and the key stays in the query (it used to be sent as `/base?key=K/reverse?format=…`).
    @Test func aBaseURLWithAPathAndAQueryKeepsBoth() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/nominatim/reverse": ["places": Self.places]])
        try configure([("geocoder.url", collector.url("/nominatim/?key=K3Y"))])

        let result = try trigger(drive)
        #expect(result.status == 0, "\(result.stderr)")
        let location = try #require(try result.json()["location"] as? [String: Any])
        #expect(location["street"] as? String == "Straffan Road")
        let requests = collector.requests("/nominatim/reverse")
        try #require(requests.count == 1, "\(collector.requests().map(\.path))")
        #expect(requests[0].query["key"] == "K3Y")
        #expect(requests[0].query["format"] == "jsonv2")
        #expect(requests[0].query["lat"] == "53.3613367")
    }

    @Test func aFailingOrUnreachableGeocoderGives1053AndTheRecordStillPrints() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/reverse": ["places": Self.places, "script": [["status": 500], ["close": true]]]])
        try configure([("geocoder.url", collector.url("")), ("geocoder.minInterval", "0s")])

        for answer in ["500", "a dropped connection"] {
            let result = try trigger(drive, ["--require-location"])
            #expect(result.status == 0, "\(answer): \(result.stderr)")
            let record = try result.json()
            let location = try #require(record["location"] as? [String: Any], "\(answer)")
            #expect(record["errorCode"] as? Int == 1053, "\(answer)")
            #expect(location["latitude"] as? String == "53.3613367")
            #expect(location["city"] as? String == "Leixlip")
            #expect(location["street"] == nil)
            #expect(result.stderr.contains("geocoder failed"), "\(answer): \(result.stderr)")
            #expect(result.stdout.split(separator: "\n").count == 1)
        }
        // A failure is not cached: the next lookup asks again and succeeds.
        let recovered = try trigger(drive)
        #expect(try recovered.json()["errorCode"] as? Int == 0)
        #expect((try recovered.json()["location"] as? [String: Any])?["street"] as? String == "Straffan Road")
        #expect(collector.requests("/reverse").count == 3)

        // Nothing listening at all.
        let (refusing, held) = try Loopback.refusingPort()
        defer { close(held) }
        try configure([("geocoder.url", "http://127.0.0.1:\(refusing)")])
        let unreachable = try trigger(kiosk)
        #expect(unreachable.status == 0)
        #expect(try unreachable.json()["errorCode"] as? Int == 1053)
        #expect((try unreachable.json()["location"] as? [String: Any])?["latitude"] as? String == "45.7640000")
    }

    /// Without a writable state directory the throttle cannot be kept, so the geocoder is not
    /// asked: 1053, and the record still printed.
    @Test func anUnwritableCacheMeansNoRequestAnd1053() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/reverse": ["places": Self.places]])
        try configure([("geocoder.url", collector.url(""))])
        #expect(FileManager.default.createFile(atPath: geolocate.stateDirectory, contents: Data("not a directory".utf8)))
        let result = try trigger(drive)
        #expect(result.status == 0, "\(result.stderr)")
        let record = try result.json()
        #expect(record["errorCode"] as? Int == 1053)
        #expect((record["location"] as? [String: Any])?["city"] as? String == "Leixlip")
        #expect(result.stderr.contains("throttle cannot be kept"), "\(result.stderr)")
        #expect(collector.requests("/reverse").isEmpty)
    }

    @Test func aPrecisionWithoutStreetsNeverAsks() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/reverse": ["places": Self.places]])
        try configure([("geocoder.url", collector.url("")), ("privacy.precision", "CITY")])
        let result = try trigger(drive, ["--format", "veridium"])
        let veridium = try result.json()
        #expect(veridium["city"] as? String == "Leixlip")
        #expect(veridium["coordinates"] == nil && veridium["street"] == nil)
        #expect(collector.requests("/reverse").isEmpty)

        // STREET asks, and reports the street without the number.
        try configure([("privacy.precision", "STREET")])
        let street = try trigger(drive).json()
        let location = try #require(street["location"] as? [String: Any])
        #expect(location["street"] as? String == "Straffan Road")
        #expect(location["streetNumber"] == nil && location["latitude"] == nil)
        #expect(collector.requests("/reverse").count == 1)

        // A coarse location's 2 km cell centre has no street worth asking for.
        try configure([("privacy.precision", "GPS_LOCATION"), ("geocoder.minInterval", "0s")])
        let coarse = try trigger(kiosk, ["--permission", "coarse"]).json()
        let coarseLocation = try #require(coarse["location"] as? [String: Any])
        #expect(coarseLocation["street"] == nil && coarseLocation["city"] != nil)
        #expect(coarse["errorCode"] as? Int == 0)
        #expect(collector.requests("/reverse").count == 1)
    }

    /// A track at STREET asks once, then is throttled along the drive: 1053 on the records
    /// that could not have a street, and one warning, not one per record.
    @Test func aThrottledTrackWarnsOnce() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/reverse": ["places": Self.places]])
        try configure([("geocoder.url", collector.url("")), ("privacy.precision", "STREET")])
        let result = try geolocate.run(["track", "--replay", drive, "--every-fix", "--stdout", "--no-spool"])
        #expect(result.status == 0, "\(result.stderr)")
        let records = try result.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(records.count == 120)
        #expect((records.first?["location"] as? [String: Any])?["street"] as? String == "Straffan Road")
        #expect(records.first?["errorCode"] as? Int == 0)
        #expect(records.dropFirst().contains { $0["errorCode"] as? Int == 1053 })
        #expect(collector.requests("/reverse").count == 1)
        #expect(result.stderr.components(separatedBy: "geocoder.minInterval").count == 2, "\(result.stderr)")
    }

    /// Records spooled before the level was lowered leave with only what the new level allows.
    @Test func flushSendsNoMoreThanThePrecisionInForce() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try configure([("endpoints.ndjson.url", collector.url("/ndjson")), ("endpoints.ndjson.format", "mosaic-ndjson"),
                       ("endpoints.openlocate.url", collector.url("/openlocate"))])
        let tracked = try geolocate.run(["track", "--replay", drive, "--every-fix"])
        #expect(tracked.status == 0, "\(tracked.stderr)")
        try configure([("privacy.precision", "COUNTRY")])
        let flushed = try geolocate.run(["flush"])
        #expect(flushed.status == 0, "\(flushed.stderr)")
        #expect(collector.acceptedIDs("/ndjson").count == 120 && collector.acceptedIDs("/openlocate").count == 120)
        let bodies = collector.requests().map(\.body)
        #expect(!bodies.isEmpty && bodies.allSatisfy { !$0.contains("latitude") && !$0.contains("altitude") && !$0.contains("city") })
        #expect(bodies.allSatisfy { $0.contains("\"countryCode\":\"IE\"") || $0.contains("\"country_code\":\"IE\"") })
    }

    /// The throttle and the cache's age on an injected clock, against the real server.
    @Test func throttleAndCacheFollowTheClock() async throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/reverse": ["places": Self.places + [["lat": 53.4, "lon": -6.5, "road": "Moyglare Road"]]]])
        let clock = SteppedClock()
        let geocoder = StreetGeocoder(baseURL: collector.url(""), cache: GeocoderCache(stateDirectory: geolocate.stateDirectory),
                                      transport: AsyncHTTPTransport(clock: clock, elapsed: SystemMonotonicClock()), clock: clock)
        #expect(try await geocoder.street(latitude: 53.36134, longitude: -6.50562).street == "Straffan Road")
        clock.advance(by: 30_000)
        await #expect(throws: GeocodingError.self) { try await geocoder.street(latitude: 53.4, longitude: -6.5) }
        // Same cell (within 0.0001°): cached, even inside the interval.
        #expect(try await geocoder.street(latitude: 53.361344, longitude: -6.505624).streetNumber == "12")
        #expect(collector.requests("/reverse").count == 1)
        clock.advance(by: 30_001)
        #expect(try await geocoder.street(latitude: 53.4, longitude: -6.5) == StreetAddress(street: "Moyglare Road"))
        #expect(collector.requests("/reverse").count == 2)
        // After 30 days the cached answer is asked again.
        clock.advance(by: 31 * 86_400_000)
        _ = try await geocoder.street(latitude: 53.36134, longitude: -6.50562)
        #expect(collector.requests("/reverse").count == 3)
        // At sea, Nominatim's {"error": ...} is an answer (no street), not a failure.
        clock.advance(by: 60_000)
        #expect(try await geocoder.street(latitude: 0, longitude: -30) == StreetAddress())
    }

    /// Lookups of cells not cached, from separate connections at once (as separate processes
    /// would make them), claim the throttle in SQLite transactions: one asks, the rest are
    /// throttled, and the answer is then shared by all.
    @Test func concurrentLookupsAskTheServiceOnce() async throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/reverse": ["places": Self.places]])
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        let clock = SteppedClock()
        let baseURL = collector.url(""), state = geolocate.stateDirectory
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<6 {
                group.addTask {
                    let geocoder = StreetGeocoder(baseURL: baseURL, cache: GeocoderCache(stateDirectory: state),
                                                  transport: AsyncHTTPTransport(clock: clock, elapsed: SystemMonotonicClock()), clock: clock)
                    return (try? await geocoder.street(latitude: 53.36134 + Double(index) * 0.001, longitude: -6.50562)) != nil
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 1)
        #expect(collector.requests("/reverse").count == 1)
    }
}

/// A clock a test moves by hand.
final class SteppedClock: WallClock, @unchecked Sendable {
    private let lock = NSLock()
    private var now: Int64 = 1_795_248_000_000

    var nowMilliseconds: Int64 { lock.withLock { now } }

    func advance(by milliseconds: Int64) { lock.withLock { now += milliseconds } }
}
