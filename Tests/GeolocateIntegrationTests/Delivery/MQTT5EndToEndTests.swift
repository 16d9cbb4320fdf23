import Foundation
import GeolocateModel
import GeolocateSpool
import Testing

/// MQTT 5 (SPEC §11): the broker's Receive Maximum bounds what is in flight, each message
/// carries its record id as user property `id` and the configured Message Expiry Interval, a
/// broker that refuses 5 gets 3.1.1 at once (said once, then remembered), and a message the
/// broker refuses by its PUBACK stays in the spool. Brokers: `fake-mqtt.py`, which logs what it
/// received and how much was unacknowledged, and the real mosquitto, which speaks 5.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct MQTT5EndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")

    /// Spools the fixes of the bundled drive and returns their ids in spool order.
    func spool() throws -> [String] { try geolocate.spoolEveryFix(of: drive) }

    func set(_ settings: [(String, String)]) throws { try geolocate.configure(settings) }

    func spooledIDs() throws -> Set<String> {
        let spool = try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock())
        return Set(try spool.records(for: "fleet", after: 0, through: Int64.max, limit: 100_000).map(\.record.id))
    }

    /// A broker advertising Receive Maximum 10 never has more than 10 messages unacknowledged,
    /// and does have 10 (the window is used, not shrunk to one); every message is MQTT 5 and
    /// carries its record's id as user property `id` and the Message Expiry Interval set.
    @Test func theBrokersReceiveMaximumBoundsTheWindow() throws {
        let ids = try spool()
        try #require(ids.count > 30)
        let broker = try FakeMQTTBroker(plan: ["window:10"])
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet"), ("endpoints.fleet.format", "mosaic-ndjson"),
                 ("endpoints.fleet.messageExpiry", "10m")])
        let result = try geolocate.run(["flush"])
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result)")
        let publishes = broker.publishes()
        #expect(publishes.map(\.id) == ids, "every record once, in order")
        #expect(publishes.allSatisfy { $0.version == 5 && $0.property == $0.id && $0.expiry == 600 },
                "\(publishes.prefix(3))")
        let most = publishes.map(\.unacknowledged).max() ?? 0
        #expect(most == 10, "at most \(most) unacknowledged at once, not the broker's 10")
        #expect(try spooledIDs().isEmpty)
    }

    /// Without a Receive Maximum from the broker, geolocate's own window holds (100 at QoS 1):
    /// the fake's count shows more than 10 in flight, which the test above could not pass with.
    @Test func withoutAReceiveMaximumTheWindowIsWider() throws {
        let ids = try spool()
        let broker = try FakeMQTTBroker(plan: ["window:0"])
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet"), ("endpoints.fleet.format", "mosaic-ndjson")])
        #expect(try geolocate.run(["flush"]).status == 0)
        let most = broker.publishes().map(\.unacknowledged).max() ?? 0
        #expect(most > 10 && broker.publishes().count == ids.count, "at most \(most) unacknowledged")
    }

    /// A broker that answers MQTT 5 as a 3.1.1 broker must (CONNACK "unacceptable protocol
    /// version"), or that closes the connection before any CONNACK: flush connects again at
    /// once with 3.1.1, delivers everything, and says so once; the next flush connects with
    /// 3.1.1 straight away and says nothing.
    @Test(arguments: ["v3only", "close-v5"]) func aBrokerThatRefuses5Gets311Once(plan: String) throws {
        let ids = try spool()
        let broker = try FakeMQTTBroker(plan: [plan])
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet"), ("endpoints.fleet.format", "mosaic-ndjson")])
        let first = try geolocate.run(["flush"])
        #expect(first.status == 0, "\(first)")
        #expect(first.stderr.components(separatedBy: "does not take MQTT 5").count == 2, "said once: \(first.stderr)")
        #expect(broker.connects() == [5, 4])
        #expect(broker.publishes().map(\.id) == ids && broker.publishes().allSatisfy { $0.version == 4 && $0.property == nil })
        #expect(FileManager.default.fileExists(atPath: geolocate.stateDirectory + "/mqtt-versions.json"))

        let more = try spool()
        let second = try geolocate.run(["flush"])
        #expect(second.status == 0 && second.stderr.isEmpty, "\(second)")
        #expect(broker.connects() == [5, 4, 4], "3.1.1 at once")
        #expect(broker.publishes().map(\.id) == ids + more)
        // Forced to 3.1.1 by the setting: no MQTT 5 attempt, nothing said.
        let other = try FakeMQTTBroker(plan: ["ack"])
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(other.port)/fleet"), ("endpoints.fleet.mqttVersion", "3.1.1")])
        _ = try spool()
        let forced = try geolocate.run(["flush"])
        #expect(forced.status == 0 && forced.stderr.isEmpty && other.connects() == [4], "\(forced) \(other.connects())")
    }

    /// QoS 2 keeps its session across a dropped connection: flush starts clean (a connection
    /// of its own ends any session a killed process left), connects with a Session Expiry
    /// Interval of 5 minutes, and when the broker drops it mid-flush, resumes the session:
    /// what was in flight goes again with its packet ids, so a broker that delivers a QoS 2
    /// message on receipt (as EMQX does) delivers every record once. The last DISCONNECT ends
    /// the session.
    @Test func aQoS2SessionResumesAfterADroppedConnection() throws {
        let ids = try spool()
        try #require(ids.count > 30)
        let broker = try FakeMQTTBroker(plan: ["ack", "cut:20", "ack"])
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet"), ("endpoints.fleet.format", "mosaic-ndjson"),
                 ("endpoints.fleet.qos", "2")])
        let result = try geolocate.run(["flush"])
        #expect(result.status == 0, "\(result)")
        let connects = broker.connections()
        #expect(connects.map(\.cleanStart) == [true, false, false] && connects.map(\.sessionExpiry) == [nil, 300, 300]
                && connects.map(\.present) == [false, false, true], "\(connects)")
        let publishes = broker.publishes()
        #expect(publishes.contains { $0.connection == 3 && $0.dup && !$0.delivered }, "what was in flight went again in its session")
        let delivered = publishes.filter(\.delivered).map(\.id)
        #expect(delivered == ids, "every record delivered once, in order: \(delivered.count) deliveries of \(ids.count) records")
        #expect(broker.disconnects() == [nil, 0], "the clean start's DISCONNECT, then the one that ends the session")
        #expect(try spooledIDs().isEmpty)
    }

    /// The control for the test above: with `sessionExpiry 0` each connection starts clean, so
    /// after the same drop what was in flight goes again as new messages, and such a broker
    /// delivers some records twice. QoS 1 keeps no session unless one is set.
    @Test func withoutASessionTheSameDropDeliversTwice() throws {
        let ids = try spool()
        let broker = try FakeMQTTBroker(plan: ["cut:20", "ack"])
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet"), ("endpoints.fleet.format", "mosaic-ndjson"),
                 ("endpoints.fleet.qos", "2"), ("endpoints.fleet.sessionExpiry", "0")])
        #expect(try geolocate.run(["flush"]).status == 0)
        #expect(broker.connections().allSatisfy { $0.cleanStart && $0.sessionExpiry == nil }, "\(broker.connections())")
        let delivered = broker.publishes().filter(\.delivered).map(\.id)
        #expect(delivered.count > ids.count && Set(delivered) == Set(ids), "\(delivered.count) deliveries of \(ids.count) records")

        let other = try FakeMQTTBroker(plan: ["ack"])
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(other.port)/fleet"), ("endpoints.fleet.qos", "1")])
        #expect(try geolocate.run(["config", "unset", "endpoints.fleet.sessionExpiry"]).status == 0)
        _ = try spool()
        #expect(try geolocate.run(["flush"]).status == 0)
        #expect(other.connections().map(\.cleanStart) == [true] && other.connections().map(\.sessionExpiry) == [nil], "\(other.connections())")
    }

    /// `config validate` says what an endpoint forced to 3.1.1 will not send (MQTT 5's
    /// Message and Session Expiry Intervals), and is quiet without them.
    @Test func validateSaysWhat311CannotSend() throws {
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:1883/fleet"), ("endpoints.fleet.mqttVersion", "3.1.1")])
        let quiet = try geolocate.run(["config", "validate"])
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet)")
        try set([("endpoints.fleet.messageExpiry", "1h"), ("endpoints.fleet.sessionExpiry", "5m")])
        let warned = try geolocate.run(["config", "validate"])
        #expect(warned.status == 0 && warned.stderr.split(separator: "\n").count == 1
                && warned.stderr.contains("endpoints.fleet.messageExpiry or endpoints.fleet.sessionExpiry: not sent"), "\(warned)")
        // Written by hand as a JSON number: the right value, the wrong JSON type, said so.
        try #"{"endpoints": {"fleet": {"url": "mqtt://127.0.0.1:1883/fleet", "mqttVersion": 5}}}"#
            .write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)
        let number = try geolocate.run(["config", "validate"])
        #expect(number.status == 78 && number.stderr.split(separator: "\n").count == 1 && number.stderr.contains("mqttVersion")
                && number.stderr.contains("written as a JSON string (in quotes)"), "\(number)")
    }

    /// Each process connects as the device id and its role, so a login's send never takes
    /// over a flush's connection: `ID-flush` for flush, `ID-trigger` for `trigger --endpoint`.
    @Test func theClientIDIsTheDeviceIDAndTheRole() throws {
        _ = try spool()
        let broker = try FakeMQTTBroker(plan: ["ack"])
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet"), ("endpoints.fleet.format", "mosaic-ndjson")])
        #expect(try geolocate.run(["flush"]).status == 0)
        let sent = try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--endpoint", "fleet", "--permission", "fine"])
        #expect(sent.status == 0, "\(sent)")
        let device = try String(contentsOfFile: geolocate.stateDirectory + "/device-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(broker.connections().map(\.client) == ["\(device)-flush", "\(device)-trigger"], "\(broker.connections())")
    }

    /// The real mosquitto (it speaks 5): a v5 subscriber sees every record with its id as the
    /// user property `id`.
    @Test func aSubscriberSeesTheIDPropertyOnEveryMessage() throws {
        let broker = try MosquittoBroker()
        let ids = try spool()
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet"), ("endpoints.fleet.format", "mosaic-ndjson")])
        let subscriber = try MQTTSubscriber(broker, topic: "fleet", version5: true)
        let result = try geolocate.run(["flush"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(waitUntil(.seconds(10)) { subscriber.properties.count >= ids.count }, "\(subscriber.properties.count) of \(ids.count)")
        let payloadIDs = subscriber.objects.compactMap { $0["id"] as? String }
        #expect(payloadIDs == ids)
        #expect(subscriber.properties == ids.map { "id:\($0)" }, "\(subscriber.properties.prefix(2))")
    }

    /// QoS 2 to a mosquitto whose `max_inflight_messages` is 10, over 5 (its Receive Maximum
    /// says 10) and over 3.1.1 (which says no limit; mosquitto answers a message over it with a
    /// PUBREC and drops it, so flush sends one at a time): every record reaches the subscriber.
    @Test(arguments: ["5", "3.1.1"]) func qos2KeepsToABrokersInflightLimit(version: String) throws {
        let broker = try MosquittoBroker(maxInflight: 10)
        let ids = try spool()
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet"), ("endpoints.fleet.format", "mosaic-ndjson"),
                 ("endpoints.fleet.qos", "2"), ("endpoints.fleet.mqttVersion", version)])
        let subscriber = try MQTTSubscriber(broker, topic: "fleet")
        let result = try geolocate.run(["flush"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(waitUntil(.seconds(10)) { subscriber.objects.count >= ids.count }, "\(subscriber.objects.count) of \(ids.count)")
        #expect(subscriber.objects.compactMap { $0["id"] as? String } == ids)
    }

    /// A topic the broker's ACL does not let the device publish to: mosquitto refuses each
    /// message in its MQTT 5 PUBACK (not authorized), where a 3.1.1 broker acknowledges and
    /// drops it. Flush exits 78 naming the refusal, and every record stays in the spool.
    @Test func aMessageTheBrokerRefusesStaysInTheSpool() throws {
        let broker = try MosquittoBroker(readOnlyTopics: ["fleet"])
        let ids = try spool()
        try set([("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet"), ("endpoints.fleet.format", "mosaic-ndjson")])
        let result = try geolocate.run(["flush"])
        #expect(result.status == 78 && result.stderr.contains("not authorized"), "\(result)")
        #expect(try spooledIDs() == Set(ids))
    }
}
