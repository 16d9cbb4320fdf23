import Foundation
import Testing

/// The `owntracks` and `osmand` formats (SPEC §11), field by field, as a real HTTP collector
/// receives them from `geolocate flush`: every value is checked against the generator's
/// truth file and the GST sentences of the log, converted in the test (knots × 1.852 for
/// km/h, the truth's own knots for OsmAnd), never against geolocate's other outputs.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct FleetFormatsEndToEndTests {
    let geolocate = GeolocateProcess()

    /// One epoch of `nmea-gen.py`'s truth, with the GST sigmas and geoid separation of its log.
    struct Truth {
        var seconds: Int64
        var latitude, longitude, altitudeMSL, knots, course: Double
        var sigmaLatitude = 0.0, sigmaLongitude = 0.0, sigmaAltitude = 0.0, geoidSeparation = 0.0
    }

    /// A 90-epoch drive at 1 Hz starting an hour ago, spooled by `track`, and its truth by second.
    func spoolGeneratedDrive() throws -> [Int64: Truth] {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let log = geolocate.home.appendingPathComponent("drive.nmea").path
        let truthPath = geolocate.home.appendingPathComponent("truth.jsonl").path
        let start = Date().addingTimeInterval(-3600)
        try Tool.generateNMEA(["--epochs", "90", "--seed", "11", "--start", ISO8601DateFormatter().string(from: start),
                                 "--truth", truthPath, "--out", log])
        var truth: [Int64: Truth] = [:]
        for line in try String(contentsOfFile: truthPath, encoding: .utf8).split(separator: "\n") {
            let entry = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard entry["fix"] as? Int == 1, entry["corrupted"] as? Bool == false else { continue }
            let text = try #require(entry["time"] as? String)
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let time = try #require(formatter.date(from: text))
            let seconds = Int64(time.timeIntervalSince1970.rounded(.down))
            truth[seconds] = Truth(seconds: seconds, latitude: entry["lat"] as! Double, longitude: entry["lon"] as! Double,
                                   altitudeMSL: entry["alt"] as! Double, knots: entry["speed_kn"] as! Double, course: entry["course"] as! Double)
        }
        // GST: $GPGST,hhmmss.ss,rms,smaj,smin,orient,σlat,σlon,σalt; GGA field 11: geoid separation.
        let day = Int64(start.timeIntervalSince1970) / 86_400 * 86_400
        // NMEA lines end in CRLF, one Character in Swift: split on any line end.
        for line in try String(contentsOfFile: log, encoding: .utf8).split(whereSeparator: \.isNewline) {
            let fields = line.split(separator: "*")[0].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard fields.count > 8, fields[0].hasSuffix("GST") || fields[0].hasSuffix("GGA") else { continue }
            let clock = fields[1]
            var seconds = day + Int64(clock.prefix(2))! * 3600 + Int64(clock.dropFirst(2).prefix(2))! * 60 + Int64(clock.dropFirst(4).prefix(2))!
            if seconds < Int64(start.timeIntervalSince1970) - 1 { seconds += 86_400 }
            if fields[0].hasSuffix("GST") {
                truth[seconds]?.sigmaLatitude = Double(fields[6]) ?? .nan
                truth[seconds]?.sigmaLongitude = Double(fields[7]) ?? .nan
                truth[seconds]?.sigmaAltitude = Double(fields[8]) ?? .nan
            } else {
                truth[seconds]?.geoidSeparation = Double(fields[11]) ?? .nan
            }
        }
        let result = try geolocate.run(["track", "--replay", log, "--every-fix", "--permission", "fine"])
        try #require(result.status == 0, "\(result.stderr)")
        return truth
    }

    func set(_ key: String, _ value: String) throws {
        let result = try geolocate.run(["config", "set", key, value])
        try #require(result.status == 0, "\(result.stderr)")
    }

    /// `value` rounded half away from zero, or either neighbour when it is within `slack` of a
    /// half (the log's rounding of the truth can tip it).
    static func rounds(_ value: Double, to integer: Any?, slack: Double = 0.01) -> Bool {
        guard let integer = integer as? Int else { return false }
        let fraction = abs(value - value.rounded(.towardZero))
        if abs(fraction - 0.5) < slack { return integer == Int(value.rounded(.down)) || integer == Int(value.rounded(.up)) }
        return integer == Int(value.rounded())
    }

    /// The 68 % horizontal radius from GST's sigmas, as docs/REFERENCE.md defines it.
    static func accuracy(_ truth: Truth) -> Double {
        1.5096 * ((truth.sigmaLatitude * truth.sigmaLatitude + truth.sigmaLongitude * truth.sigmaLongitude) / 2).squareRoot()
    }

    @Test func ownTracksMessagesFieldByField() throws {
        let truth = try spoolGeneratedDrive()
        let collector = try Collector()
        defer { collector.stop() }
        try set("endpoints.ot.url", collector.url("/pub"))
        try set("endpoints.ot.format", "owntracks")
        try set("owntracks.tid", "GL")
        let result = try geolocate.run(["flush"])
        #expect(result.status == 0, "\(result.stderr)")
        let requests = collector.requests("/pub")
        #expect(requests.count == truth.count, "one request per record")
        var checked = 0
        for request in requests {
            #expect(request.contentType == "application/json")
            let message = try #require(try JSONSerialization.jsonObject(with: Data(request.body.utf8)) as? [String: Any])
            #expect(Set(message.keys).isSubset(of: ["_type", "lat", "lon", "acc", "alt", "vac", "vel", "cog", "tst", "created_at", "tid", "t", "bs", "SSID", "BSSID"]))
            #expect(message["_type"] as? String == "location" && message["tid"] as? String == "GL" && message["t"] as? String == "t")
            let tst = try #require(message["tst"] as? Int)
            let epoch = try #require(truth[Int64(tst)], "tst \(tst) is epoch seconds of a fix in the log")
            #expect(abs((message["lat"] as? Double ?? 0) - epoch.latitude) < 2e-7)
            #expect(abs((message["lon"] as? Double ?? 0) - epoch.longitude) < 2e-7)
            #expect(Self.rounds(epoch.knots * 1.852, to: message["vel"]), "vel \(message["vel"] ?? "none") km/h for \(epoch.knots) kn")
            #expect(Self.rounds(epoch.course, to: message["cog"]))
            #expect(Self.rounds(epoch.altitudeMSL, to: message["alt"]), "alt is above mean sea level")
            #expect(Self.rounds(Self.accuracy(epoch), to: message["acc"]))
            #expect(Self.rounds(epoch.sigmaAltitude, to: message["vac"]))
            #expect(message["created_at"] is Int)
            checked += 1
        }
        #expect(checked == truth.count && checked > 80)
    }

    @Test func osmAndRequestsFieldByField() throws {
        let truth = try spoolGeneratedDrive()
        let collector = try Collector()
        defer { collector.stop() }
        try set("endpoints.traccar.url", collector.url("/osmand"))
        try set("endpoints.traccar.format", "osmand")
        let result = try geolocate.run(["flush"])
        #expect(result.status == 0, "\(result.stderr)")
        let deviceID = try String(contentsOfFile: geolocate.stateDirectory + "/device-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let requests = collector.requests("/osmand")
        #expect(requests.count == truth.count, "one request per record")
        for request in requests {
            let query = request.query
            #expect(Set(query.keys) == ["id", "lat", "lon", "timestamp", "altitude", "speed", "bearing", "accuracy"])
            #expect(query["id"] == deviceID && request.body.isEmpty)
            let timestamp = try #require(query["timestamp"].flatMap { Int64($0) })
            let epoch = try #require(truth[timestamp], "timestamp \(timestamp) is epoch seconds of a fix in the log")
            #expect(abs(Double(query["lat"] ?? "")! - epoch.latitude) < 2e-7 && query["lat"]?.split(separator: ".").last?.count == 7)
            #expect(abs(Double(query["lon"] ?? "")! - epoch.longitude) < 2e-7)
            #expect(abs(Double(query["speed"] ?? "")! - epoch.knots) <= 0.0051, "speed \(query["speed"] ?? "") is knots: \(epoch.knots)")
            #expect(abs(Double(query["bearing"] ?? "")! - epoch.course) <= 0.051)
            #expect(abs(Double(query["altitude"] ?? "")! - (epoch.altitudeMSL + epoch.geoidSeparation)) <= 0.051, "altitude is above the ellipsoid")
            #expect(abs(Double(query["accuracy"] ?? "")! - Self.accuracy(epoch)) <= 0.051)
        }
    }

    /// A record without coordinates (a timeout, or privacy withholding them) has no OwnTracks
    /// or OsmAnd message: trigger does not send it, and flush passes it over, counted as
    /// skipped, without holding the queue.
    @Test func recordsWithoutCoordinatesAreSkipped() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try set("endpoints.traccar.url", collector.url("/osmand"))
        try set("endpoints.traccar.format", "osmand")
        let trigger = try geolocate.run(["trigger", "login", "--replay", GeolocateProcess.fixture("nofix-only.nmea"), "--permission", "fine",
                                         "--endpoint", "traccar", "--timeout", "200ms"])
        #expect(trigger.status == 0, "\(trigger.stderr)")
        #expect(trigger.stderr.contains("has no location"), "\(trigger.stderr)")
        #expect(collector.requests("/osmand").isEmpty)

        let truth = try spoolGeneratedDrive()
        try set("privacy.locationAttributeFilter", "accuracy,altitude")
        let result = try geolocate.run(["flush", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = FlushEndToEndTests.report(result.stdout)["traccar"]
        #expect(report?["skipped"] as? Int == truth.count && report?["pending"] as? Int == 0, "\(report ?? [:])")
        #expect(collector.requests("/osmand").isEmpty)
    }

    @Test func triggerPrintsEachFormat() throws {
        let drive = GeolocateProcess.example("maynooth-drive.nmea")
        try set("owntracks.tid", "AB")
        let owntracks = try geolocate.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--timeout", "10s", "--format", "owntracks"])
        #expect(owntracks.status == 0)
        let message = try owntracks.json()
        #expect(message["_type"] as? String == "location" && message["tid"] as? String == "AB" && message["t"] as? String == "u")
        #expect(message["lat"] is Double && message["tst"] is Int)
        let osmand = try geolocate.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--timeout", "10s", "--format", "osmand"])
        #expect(osmand.status == 0)
        let items = Dictionary(uniqueKeysWithValues: osmand.stdout.trimmingCharacters(in: .newlines).split(separator: "&").map {
            let pair = $0.split(separator: "=", maxSplits: 1)
            return (String(pair[0]), String(pair.count > 1 ? pair[1] : ""))
        })
        #expect(items["lat"] != nil && items["lon"] != nil && items["id"]?.count == 36)
    }
}
