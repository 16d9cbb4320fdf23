import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import Logging

#if canImport(Glibc)
import Glibc
#endif

extension ConfigStore {
    /// `config validate`: the file read, the zones it names, its endpoints' settings that only
    /// make sense together (osmand over MQTT, a key without its certificate) and their TLS
    /// files, the street geocoder's TLS; a warning on `logger` for secrets written inline in a
    /// file its group or others may read (a file: secret is readable by the services alone,
    /// SPEC §16), and for MQTT 5 settings an endpoint forced to 3.1.1 cannot send. Returns the
    /// line `validate` prints.
    /// - Throws: `GeolocateError.configuration` (78) naming the file and what is wrong.
    package func validate(clock: WallClock, elapsed: MonotonicClock, logger: Logger) throws -> String {
        let settings = try settings()
        try LocationPolicy.validate(settings)
        for endpoint in settings.endpoints {
            do { try endpoint.validate() } catch let error as GeolocateError {
                throw GeolocateError.configuration(file: path, line: nil, reason: "endpoint \(endpoint.name): \(error.description)")
            }
        }
        do {
            _ = try StreetGeocoder(settings: settings, stateDirectory: "", clock: clock, elapsed: elapsed)?.tlsConfiguration()
        } catch let error as GeolocateError {
            throw GeolocateError.configuration(file: path, line: nil, reason: error.description)
        }
        for endpoint in settings.endpoints where endpoint.isMQTT && endpoint.mqtt.version == .v311 {
            // MQTT 5's properties have no form in 3.1.1: said here, since flush sends without them.
            let unsent = [("messageExpiry", endpoint.mqtt.messageExpiryMilliseconds), ("sessionExpiry", endpoint.mqtt.sessionExpiryMilliseconds)]
                .filter { $0.1 != nil }.map { "endpoints.\(endpoint.name).\($0.0)" }
            if !unsent.isEmpty {
                logger.warning("endpoint \(endpoint.name) speaks MQTT 3.1.1 (mqttVersion), which has no \(unsent.joined(separator: " or ")): not sent")
            }
        }
        var info = stat()
        let secrets = ConfigStore.inlineSecretKeys(settings.document)
        if stat(path, &info) == 0, info.st_mode & 0o044 != 0, !secrets.isEmpty {
            logger.warning("\(path) may be read by its group or others (mode \(String(info.st_mode & 0o777, radix: 8))) and holds secrets inline: \(secrets.joined(separator: ", ")); put each in a file only the services read and give file:/PATH instead")
        }
        return "ok: \(path)"
    }
}
