import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The configuration file as every command reads it, in this process through `ConfigStore`
/// and `Trigger.respond` (moved from ConfigEndToEndTests, which keeps the flags' parsing and
/// files planted for other process ids, and from DeviceRolesEndToEndTests, which needs root
/// for the rest): a corrupt or duplicated or out-of-range file is refused by each command and
/// never written over; secrets others may read are warned of; endpoint actions are action
/// names; no permission is a policy reason of its own.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct ConfigFileTests {
    let geolocate = InProcessTrigger()

    @Test func corruptFileIsNeverOverwritten() async throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let corrupt = "{\n  \"permissions\": [\"fine\"],\n  \"actions\": {\n    \"login\": { \"mode\": force }\n  }\n}\n"
        try corrupt.write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)

        for arguments in [["config", "set", "permissions", "coarse"], ["config", "validate"], ["config", "show"],
                          ["trigger", "login", "--replay", "Examples/nmea/kiosk-gnss.nmea"]] {
            let result = await geolocate.run(arguments)
            #expect(result.status == 78, "\(arguments)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains(geolocate.configPath + ":4"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1)
        }
        #expect(try String(contentsOfFile: geolocate.configPath, encoding: .utf8) == corrupt)

        #expect(await geolocate.run(["config", "reset"]).status == 0)
        #expect(try String(contentsOfFile: geolocate.configPath + ".bak", encoding: .utf8) == corrupt)
        #expect(await geolocate.run(["config", "validate"]).status == 0)
    }

    /// A key given twice is refused at any depth: Foundation kept the first copy
    /// (GPS_LOCATION, fine) where jq and Python keep the last (CITY, none), and
    /// `config validate` said ok.
    @Test(arguments: [
        ("{\"privacy\": {\"precision\": \"GPS_LOCATION\",\n  \"precision\": \"CITY\"}}\n", "privacy.precision", 2),
        ("{\"permissions\": [\"fine\"],\n\n \"permissions\": []}\n", "permissions", 3),
        ("{\"endpoints\": {\"p\": {\"url\": \"http://127.0.0.1:9/in\", \"headers\": {\"X-Key\": \"a\", \"X-Key\": \"b\"}}}}\n", "endpoints.p.headers.X-Key", 1),
    ])
    func aDuplicateKeyIsRefusedWithItsPathAndLine(_ content: String, _ key: String, _ line: Int) async throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        try content.write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)
        for arguments in [["config", "validate"], ["config", "show"], ["config", "set", "privacy.precision", "CITY"],
                          ["trigger", "login", "--replay", InProcessTrigger.example("kiosk-gnss.nmea")]] {
            let result = await geolocate.run(arguments)
            #expect(result.status == 78 && result.stdout.isEmpty, "\(arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1)
            #expect(result.stderr.contains("\(geolocate.configPath):\(line): duplicate key '\(key)'"), "\(result.stderr)")
        }
        #expect(try String(contentsOfFile: geolocate.configPath, encoding: .utf8) == content, "never written over")
    }

    @Test(arguments: [
        #"{"spool": {"maxRecords": 0.5}}"#, #"{"spool": {"maxRecords": 0}}"#,
        #"{"endpoints": {"primary": {"url": "http://127.0.0.1:9/x", "batchSize": 1.5}}}"#,
        #"{"triggerActionQueryTimeout": 1e300}"#, #"{"lastKnownMaxAge": 1e300}"#,
        #"{"visits": {"radius": 1e308}}"#,
    ])
    func anOutOfRangeNumberInTheFileIsAConfigurationError(_ text: String) async throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        try text.write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)
        for arguments in [["config", "validate"], ["trigger", "login", "--replay", "Examples/nmea/kiosk-gnss.nmea"]] {
            let result = await geolocate.run(arguments)
            #expect(result.status == 78, "\(arguments) with \(text): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains(geolocate.configPath + ":1:"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1)
        }
    }

    @Test func noPermissionIsItsOwnReason() async throws {
        let zones = geolocate.home.appendingPathComponent("zones.geojson").path
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: TestPaths.projectRoot.appendingPathComponent("Examples/pam/zones.geojson").path, toPath: zones)
        #expect(await geolocate.run(["config", "set", "policy.zones", zones]).status == 0)
        let result = await geolocate.run(["trigger", "login", "--policy", "--replay", InProcessTrigger.example("kiosk-gnss.nmea")])
        let policy = try result.json()["policy"] as? [String: Any]
        #expect(policy?["reason"] as? String == "no location permission is granted (geolocate config set permissions fine)"
                && policy?["decision"] as? String == "undetermined", "\(result)")
    }

    @Test func configValidateWarnsOfInlineSecretsItsGroupMayRead() async throws {
        #expect(await geolocate.run(["config", "set", "endpoints.risk.url", "https://user:pw@risk.example/in"]).status == 0)
        #expect(await geolocate.run(["config", "set", "endpoints.risk.headers.Authorization", "Bearer abc"]).status == 0)
        let secret = geolocate.home.appendingPathComponent("token").path
        try "Bearer def\n".write(toFile: secret, atomically: true, encoding: .utf8)
        #expect(await geolocate.run(["config", "set", "endpoints.fleet.url", "https://fleet.example/in"]).status == 0)
        #expect(await geolocate.run(["config", "set", "endpoints.fleet.headers.Authorization", "file:\(secret)"]).status == 0)
        let private_ = await geolocate.run(["config", "validate"])
        #expect(private_.status == 0 && private_.stderr.isEmpty, "a 0600 config keeps its secrets to its owner: \(private_)")
        chmod(geolocate.configPath, 0o640)
        let shared = await geolocate.run(["config", "validate"])
        #expect(shared.status == 0 && shared.stderr.contains("mode 640")
                && shared.stderr.contains("endpoints.risk.headers.Authorization, endpoints.risk.url")
                && !shared.stderr.contains("fleet") && !shared.stderr.contains("abc") && !shared.stderr.contains("pw@"), "\(shared)")
    }

    @Test func endpointActionsAreActionNames() async throws {
        #expect(await geolocate.run(["config", "set", "endpoints.risk.actions", "login,checkout"]).status == 0)
        #expect(await geolocate.run(["config", "get", "endpoints.risk.actions"]).stdout.contains("checkout"))
        for bad in ["", "log.in", "login,bad name"] {
            let refused = await geolocate.run(["config", "set", "endpoints.risk.actions", bad])
            #expect(refused.status == 64 && refused.stderr.contains("endpoints.risk.actions"), "\(bad): \(refused)")
        }
    }
}
