import Foundation
import GeolocateConfig
import GeolocateModel

/// The MQTT brokers that refused MQTT 5, per endpoint, kept in the state directory
/// (`mqtt-versions.json`): flush connects to them with 3.1.1 at once and says the fallback
/// only the first time, so a cron job stays quiet.
///
/// An entry names the broker (`HOST:PORT`) it was found at: an endpoint given another broker
/// tries 5 again. `endpoints.NAME.mqttVersion 3.1.1` says the same for good, without a file.
package struct MQTTVersionMemory: Sendable {
    package let path: String

    package init(stateDirectory: String) {
        path = StateFile.mqttVersions.path(in: stateDirectory)
    }

    /// Whether `broker` of `endpoint` refused 5 before.
    package func refusedVersion5(endpoint: String, broker: MQTTBroker) -> Bool {
        stored()[endpoint] == Self.place(of: broker)
    }

    /// `broker` as it is to be connected to: 3.1.1 at once when it asks for 5 and refused
    /// 5 before; as it is otherwise (and when it is not MQTT at all).
    package func applied(to broker: MQTTBroker?, endpoint: String) -> MQTTBroker? {
        guard var broker, broker.version == .v5, refusedVersion5(endpoint: endpoint, broker: broker) else { return broker }
        broker.version = .v311
        return broker
    }

    /// Keeps that `broker` of `endpoint` refused 5.
    /// - Throws: `GeolocateError.stateNotWritable` (73).
    package func rememberRefusal(endpoint: String, broker: MQTTBroker) throws {
        var entries = stored()
        entries[endpoint] = Self.place(of: broker)
        try AtomicFile.writeState(entries, to: path)
    }

    private static func place(of broker: MQTTBroker) -> String { "\(broker.host):\(broker.port)" }

    /// The entries kept: none when there is no file or it is not ours to read (a planted link
    /// or another program's text), which costs one MQTT 5 attempt, never a record.
    private func stored() -> [String: String] {
        guard let (directory, name) = try? OpenDirectory.parent(of: path, create: false),
              let data = try? directory.read(name, limit: 64 * 1024) else { return [:] }
        return (try? JSONDecoder().decode([String: String].self, from: data)) ?? [:]
    }
}
