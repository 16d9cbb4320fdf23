import Foundation
import GeolocateSpool
import GeolocateModel
import Testing

/// Flush keeps hundreds of MQTT messages in flight across batches (SPEC §9); these check that
/// a record still leaves the spool only once the broker's acknowledgement of it was really
/// sent, and that a dropped connection publishes again only what was not acknowledged.
/// The broker is `fake-mqtt.py`, which acknowledges only what each test plans.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct MQTTAcknowledgementEndToEndTests {
    let geolocate = GeolocateProcess()
    static let acknowledgedFirst = 250

    /// Spools a generated drive of `epochs` fixes and returns the ids in spool order.
    func spool(epochs: Int) throws -> [String] {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let log = geolocate.home.appendingPathComponent("drive.nmea").path
        try Tool.generateNMEA(["--epochs", String(epochs), "--seed", "30", "--out", log,
                                 "--start", ISO8601DateFormatter().string(from: Date().addingTimeInterval(-3600))])
        let result = try geolocate.run(["track", "--replay", log, "--every-fix", "--stdout", "--permission", "fine"])
        try #require(result.status == 0, "\(result.stderr)")
        return result.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["id"] as? String
        }
    }

    func configure(_ broker: FakeMQTTBroker, qos: Int) throws {
        for (key, value) in [("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet"), ("endpoints.fleet.format", "mosaic-ndjson"),
                             ("endpoints.fleet.qos", String(qos)), ("endpoints.fleet.batchSize", "100")] {
            let result = try geolocate.run(["config", "set", key, value])
            try #require(result.status == 0, "\(key): \(result.stderr)")
        }
    }

    func spooledIDs() throws -> Set<String> {
        let spool = try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock())
        return Set(try spool.records(for: "fleet", after: 0, through: Int64.max, limit: 100_000).map(\.record.id))
    }

    /// The broker acknowledges the first 250 messages (mid-batch) and then none, and is gone
    /// when flush tries again: exactly those 250 records are delivered, every other one stays.
    @Test(arguments: [1, 2]) func onlyAcknowledgedRecordsLeaveTheSpool(qos: Int) throws {
        let ids = try spool(epochs: 1000)
        try #require(ids.count == 1000)
        // At QoS 2 flush first makes a clean start, in a connection of its own that publishes nothing.
        let broker = try FakeMQTTBroker(plan: (qos == 2 ? ["ack"] : []) + ["ack:\(Self.acknowledgedFirst)", "down"])
        try configure(broker, qos: qos)
        let result = try geolocate.run(["flush", "--json"])
        #expect(result.status == 75, "\(result.stderr)")
        let publishes = broker.publishes()
        let acknowledged = publishes.filter(\.acknowledged).map(\.id)
        // The broker's own record: it acknowledged exactly the first 250, and flush had
        // published more than those before the connection closed (messages were in flight).
        let acknowledgedInOrder = acknowledged == Array(ids.prefix(Self.acknowledgedFirst))
        #expect(acknowledgedInOrder, "the broker acknowledged \(acknowledged.count) records")
        #expect(publishes.count > Self.acknowledgedFirst)
        let left = try spooledIDs()
        let leftAreTheUnacknowledged = left == Set(ids.dropFirst(Self.acknowledgedFirst))
        #expect(leftAreTheUnacknowledged, "\(left.count) records left in the spool, not the \(ids.count - Self.acknowledgedFirst) unacknowledged")
        let report = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let endpoint = (report?["endpoints"] as? [[String: Any]])?.first
        #expect(endpoint?["sent"] as? Int == Self.acknowledgedFirst)
        #expect(endpoint?["pending"] as? Int == ids.count - Self.acknowledgedFirst)
    }

    /// The connection drops after 250 acknowledgements; the next one is acknowledged whole: it
    /// carries exactly the records not acknowledged before, in spool order, from the 251st.
    @Test func aDroppedConnectionPublishesAgainOnlyTheUnacknowledged() throws {
        let ids = try spool(epochs: 1000)
        let broker = try FakeMQTTBroker(plan: ["ack:\(Self.acknowledgedFirst)", "ack"])
        try configure(broker, qos: 1)
        let result = try geolocate.run(["flush", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try spooledIDs().isEmpty)
        let publishes = broker.publishes()
        let first = publishes.filter { $0.connection == 1 && $0.acknowledged }.map(\.id)
        let firstIsThePrefix = first == Array(ids.prefix(Self.acknowledgedFirst))
        #expect(firstIsThePrefix, "the first connection acknowledged \(first.count) records")
        let second = publishes.filter { $0.connection == 2 }.map(\.id)
        let secondIsTheRest = second == Array(ids.dropFirst(Self.acknowledgedFirst))
        #expect(secondIsTheRest, "the second connection carried \(second.count) records, from record \(second.first.flatMap(ids.firstIndex(of:)).map { $0 + 1 } ?? 0); expected \(ids.count - Self.acknowledgedFirst) from record \(Self.acknowledgedFirst + 1)")
        #expect(!publishes.contains { $0.connection > 2 })
    }
}
