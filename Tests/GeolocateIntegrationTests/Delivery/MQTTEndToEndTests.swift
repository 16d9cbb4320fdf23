import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `geolocate flush` and `trigger --endpoint` to a real mosquitto broker (SPEC §11), checked
/// by a `mosquitto_sub` subscriber started before the flush: every spooled id must arrive,
/// and a record leaves the spool only once the broker acknowledged it.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct MQTTEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")

    /// Spools the fixes of `log` and returns their ids in spool order.
    func spool(_ log: String) throws -> [String] { try geolocate.spoolEveryFix(of: log) }

    func set(_ settings: [(String, String)]) throws { try geolocate.configure(settings) }

    func spooledCount() throws -> Int { try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).count() }

    var deviceID: String {
        get throws { try String(contentsOfFile: geolocate.stateDirectory + "/device-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    /// The ids the subscriber received, once each at least.
    static func ids(_ subscriber: MQTTSubscriber) -> Set<String> { Set(subscriber.objects.compactMap { $0["id"] as? String }) }

    @Test(arguments: [0, 1, 2]) func everyRecordArrivesAtEachQoS(qos: Int) throws {
        let broker = try MosquittoBroker()
        let ids = try spool(drive)
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet/{deviceId}/locations"),
                 ("endpoints.fleet.format", "mosaic-ndjson"), ("endpoints.fleet.qos", String(qos))])
        let subscriber = try MQTTSubscriber(broker, topic: "fleet/#")
        let result = try geolocate.run(["flush", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try spooledCount() == 0)
        // QoS 0 has no acknowledgement; the subscriber still gets every message on loopback.
        #expect(waitUntil(.seconds(10)) { Self.ids(subscriber) == Set(ids) }, "\(Self.ids(subscriber).count) of \(ids.count)")
        let topics = Set(subscriber.messages.map(\.topic))
        #expect(topics == ["fleet/\(try deviceID)/locations"])
    }

    @Test func mutualTLSDelivers() throws {
        let broker = try MosquittoBroker(.mutualTLS)
        let ids = try spool(drive)
        try set([("endpoints.secure.url", "mqtts://127.0.0.1:\(broker.port)/secure"), ("endpoints.secure.format", "mosaic"),
                 ("endpoints.secure.caFile", broker.path("ca.crt")), ("endpoints.secure.certFile", broker.path("client.crt")),
                 ("endpoints.secure.keyFile", broker.path("client.key"))])
        let subscriber = try MQTTSubscriber(broker, topic: "secure")
        let result = try geolocate.run(["flush"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(waitUntil(.seconds(10)) { Self.ids(subscriber) == Set(ids) })
        #expect(try spooledCount() == 0)
    }

    @Test func wrongOrMissingTLSFilesAreConfigurationErrors() throws {
        let broker = try MosquittoBroker(.mutualTLS)
        let ids = try spool(drive)
        try set([("endpoints.secure.url", "mqtts://127.0.0.1:\(broker.port)/secure"),
                 ("endpoints.secure.certFile", broker.path("client.crt")), ("endpoints.secure.keyFile", broker.path("client.key"))])
        // A missing CA file.
        try set([("endpoints.secure.caFile", broker.path("no-such-ca.crt"))])
        var result = try geolocate.run(["flush"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("endpoint secure") && result.stderr.contains("cannot read caFile"), "\(result.stderr)")
        // A CA that did not sign the broker's certificate: the handshake fails.
        try set([("endpoints.secure.caFile", broker.path("client.crt"))])
        result = try geolocate.run(["flush"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("endpoint secure") && result.stderr.contains("TLS handshake"), "\(result.stderr)")
        #expect(try spooledCount() == ids.count)
    }

    /// A TLS file that is a FIFO made libmosquitto's open wait for a writer: flush hung for
    /// ever, and every later flush on its lock, while `config validate` said ok.
    @Test(arguments: ["caFile", "certFile"]) func aTLSFileThatIsAFIFOIsRefusedAtOnce(_ key: String) throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let fifo = geolocate.home.appendingPathComponent("tls-fifo").path
        let pem = geolocate.home.appendingPathComponent("other.pem").path
        #expect(mkfifo(fifo, 0o600) == 0)
        try "".write(toFile: pem, atomically: true, encoding: .utf8)
        // With records pending, flush connects: that is where libmosquitto opened the FIFO.
        let ids = try spool(GeolocateProcess.example("kiosk-gnss.nmea"))
        try set([("endpoints.secure.url", "mqtts://127.0.0.1:9/secure"), ("endpoints.secure.\(key)", fifo)]
                + (key == "certFile" ? [("endpoints.secure.keyFile", pem)] : []))
        for arguments in [["config", "validate"], ["flush"], ["flush", "--json"]] {
            let running = try geolocate.start(arguments)
            let result = try #require(running.finish(within: .seconds(20)), "\(arguments) hung on a FIFO")
            #expect(result.status == 78, "\(arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(result.stderr.contains("endpoint secure") && result.stderr.contains("\(key) \(fifo) is a FIFO, not a regular file"),
                    "\(result.stderr)")
            if arguments == ["flush"] { #expect(result.stdout.isEmpty) }
        }
        #expect(try spooledCount() == ids.count, "the records stay pending")
    }

    @Test func aWrongPasswordIsAConfigurationErrorAndLosesNothing() throws {
        let broker = try MosquittoBroker(.password(user: "device", password: "right horse"))
        let ids = try spool(drive)
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet"), ("endpoints.fleet.format", "owntracks"),
                 ("endpoints.fleet.username", "device"), ("endpoints.fleet.password", "wrong battery")])
        var result = try geolocate.run(["flush"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("endpoint fleet") && result.stderr.contains("user name or password"), "\(result.stderr)")
        #expect(!result.stderr.contains("wrong battery"))
        #expect(try spooledCount() == ids.count)
        // config show never prints the password.
        let shown = try geolocate.run(["config", "show"])
        #expect(!shown.stdout.contains("wrong battery") && shown.stdout.contains("***"))

        let subscriber = try MQTTSubscriber(broker, topic: "fleet", credentials: ("device", "right horse"))
        try set([("endpoints.fleet.password", "right horse")])
        result = try geolocate.run(["flush"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(waitUntil(.seconds(10)) { subscriber.objects.count >= ids.count })
        #expect(subscriber.objects.allSatisfy { $0["_type"] as? String == "location" })
        #expect(try spooledCount() == 0)
    }

    @Test func aBrokerThatIsDownKeepsTheRecordsPending() throws {
        let broker = try MosquittoBroker()
        let ids = try spool(drive)
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet"), ("endpoints.fleet.format", "mosaic")])
        broker.stop()
        var result = try geolocate.run(["flush", "--json"])
        #expect(result.status == 75, "\(result.stderr)")
        #expect(result.stderr.contains("cannot connect to 127.0.0.1:\(broker.port)"), "\(result.stderr)")
        #expect(try spooledCount() == ids.count)
        try broker.start()
        let subscriber = try MQTTSubscriber(broker, topic: "fleet")
        result = try geolocate.run(["flush", "--ignore-retry-after"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(waitUntil(.seconds(10)) { Self.ids(subscriber) == Set(ids) })
    }

    /// 10,000 records; the broker is stopped while the flush is publishing them and started
    /// again: every id reaches the subscriber, whose session the broker kept.
    @Test func tenThousandRecordsSurviveABrokerRestartMidFlush() throws {
        let broker = try MosquittoBroker()
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let log = geolocate.home.appendingPathComponent("ten-thousand.nmea").path
        try Tool.generateNMEA(["--epochs", "10000", "--seed", "15", "--out", log,
                                 // Recent enough that spool.maxRetention does not expire it.
                                 "--start", ISO8601DateFormatter().string(from: Date().addingTimeInterval(-4 * 3600))])
        let ids = try spool(log)
        try #require(ids.count == 10_000)
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet"), ("endpoints.fleet.format", "mosaic-ndjson"),
                 ("endpoints.fleet.batchSize", "100")])
        let subscriber = try MQTTSubscriber(broker, topic: "fleet")
        let flush = try geolocate.start(["flush", "--json"])
        try #require(waitUntil(.seconds(60)) { subscriber.messages.count >= 500 })
        // The flush is mid-way: it runs, and the subscriber has some of the records, not all.
        try #require(flush.isRunning)
        let before = Self.ids(subscriber).count
        broker.stop()
        #expect(before < ids.count)
        try broker.start()
        var result = try #require(flush.finish(within: .seconds(120)))
        #expect(result.status == 0 || result.status == 75, "\(result.stderr)")
        if result.status == 75 {
            result = try geolocate.run(["flush", "--ignore-retry-after"])
            #expect(result.status == 0, "\(result.stderr)")
        }
        #expect(try spooledCount() == 0)
        #expect(waitUntil(.seconds(60)) { Self.ids(subscriber) == Set(ids) }, "\(Self.ids(subscriber).count) of \(ids.count) arrived")
    }

    @Test func triggerPublishesToAnMQTTEndpoint() throws {
        let broker = try MosquittoBroker()
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/owntracks/geolocate/{deviceId}"),
                 ("endpoints.fleet.format", "owntracks"), ("owntracks.tid", "GL")])
        let subscriber = try MQTTSubscriber(broker, topic: "owntracks/#")
        let result = try geolocate.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--timeout", "10s", "--endpoint", "fleet"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(waitUntil(.seconds(10)) { subscriber.objects.count == 1 })
        let message = try #require(subscriber.objects.first)
        #expect(message["_type"] as? String == "location" && message["tid"] as? String == "GL" && message["lat"] is Double)
        #expect(subscriber.messages.first?.topic == "owntracks/geolocate/\(try deviceID)")
        #expect(try spooledCount() == 0)
    }

    @Test func unusableMQTTURLsAreRefusedByConfigSet() throws {
        let long = "mqtt://127.0.0.1:1883/" + String(repeating: "a", count: 65_520) + "{deviceId}"
        for url in ["mqtt://127.0.0.1:1883/", "mqtt://127.0.0.1:1883/fleet/#", "mqtt://127.0.0.1:1883/a/+/b", "mqtt://:1883/t", "mqtt://host:70000/t",
                    "mqtt://127.0.0.1:1883/$SYS/x", long] {
            let result = try geolocate.run(["config", "set", "endpoints.fleet.url", url])
            #expect(result.status == 64, "\(url)")
            #expect(result.stderr.hasPrefix("geolocate: endpoints.fleet.url: invalid") && result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
        // OsmAnd over MQTT is refused in either order, and nothing of the refused value is stored.
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:1/t")])
        let format = try geolocate.run(["config", "set", "endpoints.fleet.format", "osmand"])
        #expect(format.status == 64 && format.stderr == "geolocate: endpoints.fleet.format: endpoint fleet: the osmand format is HTTP only; use owntracks, openlocate or mosaic over MQTT\n",
                "\(format.stderr)")
        try set([("endpoints.other.url", "http://127.0.0.1:1/"), ("endpoints.other.format", "osmand")])
        let url = try geolocate.run(["config", "set", "endpoints.other.url", "mqtt://127.0.0.1:1/t"])
        #expect(url.status == 64 && url.stderr.contains("endpoint other: the osmand format is HTTP only"), "\(url.stderr)")
        #expect(try geolocate.run(["config", "get", "endpoints.fleet.format"]).stdout == "openlocate\n")
        #expect(try geolocate.run(["config", "get", "endpoints.other.url"]).stdout == "http://127.0.0.1:1/\n")
        // A file written by hand is refused by validate and flush, whatever the scheme's case.
        try #"{"endpoints":{"fleet":{"url":"MQTT://127.0.0.1:1/t","format":"osmand"}}}"#
            .write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)
        let validate = try geolocate.run(["config", "validate"])
        #expect(validate.status == 78 && validate.stderr.contains("endpoint fleet: the osmand format is HTTP only"), "\(validate.stderr)")
        _ = try spool(drive)
        let result = try geolocate.run(["flush"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("osmand format is HTTP only") && !result.stderr.contains("endpoint fleet: endpoint fleet"), "\(result.stderr)")
        #expect(result.stderr.contains("(check endpoints.fleet.url, its username, password and TLS files)"), "\(result.stderr)")
    }

    /// Examples/fleet/config.json as shipped, but for the test broker's port: the fleet's
    /// consumer subscription `fleet/+/locations` gets every record.
    @Test func theFleetExampleDelivers() throws {
        let broker = try MosquittoBroker()
        let example = try String(contentsOf: GeolocateProcess.projectRoot.appendingPathComponent("Examples/fleet/config.json"), encoding: .utf8)
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        try example.replacingOccurrences(of: "127.0.0.1:1883", with: "127.0.0.1:\(broker.port)")
            .write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)
        let ids = try spool(drive)
        let subscriber = try MQTTSubscriber(broker, topic: "fleet/+/locations")
        let result = try geolocate.run(["flush"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(waitUntil(.seconds(10)) { Self.ids(subscriber) == Set(ids) })
        #expect(Set(subscriber.messages.map(\.topic)) == ["fleet/\(try deviceID)/locations"])
    }

    /// Examples/owntracks/config-http.json as shipped, but for a local collector: Home
    /// Assistant's webhook gets OwnTracks messages with the user and device headers.
    @Test func theOwnTracksHTTPExampleDelivers() throws {
        let collector = try Collector()
        defer { collector.stop() }
        let example = try String(contentsOf: GeolocateProcess.projectRoot.appendingPathComponent("Examples/owntracks/config-http.json"), encoding: .utf8)
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        try example.replacingOccurrences(of: "https://homeassistant.local:8123/api/webhook/REPLACE-WITH-YOUR-WEBHOOK-ID", with: collector.url("/api/webhook/test"))
            .write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)
        let result = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--endpoint", "homeassistant"])
        #expect(result.status == 0, "\(result.stderr)")
        let request = try #require(collector.requests("/api/webhook/test").first)
        #expect(request.headers["X-Limit-U"] == "geolocate" && request.headers["X-Limit-D"] == "gateway", "\(request.headers)")
        let message = try #require(try JSONSerialization.jsonObject(with: Data(request.body.utf8)) as? [String: Any])
        #expect(message["_type"] as? String == "location" && message["tid"] as? String == "GL" && message["lat"] is Double)
        let mqtt = try geolocate.run(["config", "validate", "--config", GeolocateProcess.projectRoot.appendingPathComponent("Examples/owntracks/config.json").path])
        #expect(mqtt.status == 0, "\(mqtt.stderr)")
    }
}
