import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateModel
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `config set`, `get`, `unset`, `show`, `validate` and `reset` in this process, with what
/// each prints and exits with (moved from ConfigEndToEndTests: none of them needs a process;
/// the parsing of their words is what ConfigEndToEndTests keeps).
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct ConfigCommandTests {
    let config = InProcessConfig()

    @Test func setGetUnsetRoundTrip() throws {
        #expect(config.run(["config", "set", "actions.checkout.mode", "last-known:30"]).status == 0)
        #expect(config.run(["config", "set", "actions.checkout.timeout", "2s"]).status == 0)
        #expect(config.run(["config", "set", "permissions", "fine,coarse"]).status == 0)
        #expect(config.run(["config", "set", "triggerActionQueryTimeout", "2500"]).status == 0)
        #expect(config.run(["config", "set", "source", "gpsd://127.0.0.1:2948"]).status == 0)
        #expect(config.run(["config", "set", "defaultInterval", "force-last-known"]).status == 0)
        // Stored in its one spelling: N minutes of last-known:N written with its unit.
        #expect(config.run(["config", "get", "actions.checkout.mode"]).stdout == "last-known:30m\n")
        #expect(config.run(["config", "get", "triggerActionQueryTimeout"]).stdout == "2500\n")
        let permissions = config.run(["config", "get", "permissions"]).stdout
        #expect(permissions.contains("\"fine\"") && permissions.contains("\"coarse\""))

        let attributes = try FileManager.default.attributesOfItem(atPath: config.configPath)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)

        #expect(config.run(["config", "unset", "actions.checkout.mode"]).status == 0)
        #expect(config.run(["config", "get", "actions.checkout.mode"]).stdout == "force-current\n")  // built-in table
        #expect(config.run(["config", "get", "actions.checkout.timeout"]).stdout == "2s\n")
        #expect(config.run(["config", "validate"]).status == 0)
        #expect(config.run(["config", "path"]).stdout == config.configPath + "\n")

        // Built-in values where the help names them; an empty list on one line; a key with
        // no value at all says so (before: exit 1 and nothing on either stream).
        #expect(config.run(["config", "get", "actions.foo.mode"]).stdout == "default\n")
        #expect(config.run(["config", "get", "endpoints.b.batchSize"]).stdout == "500\n")
        #expect(config.run(["config", "get", "endpoints.b.format"]).stdout == "openlocate\n")
        #expect(config.run(["config", "set", "permissions", "none"]).status == 0)
        #expect(config.run(["config", "get", "permissions"]).stdout == "[]\n")
        let unset = config.run(["config", "get", "endpoints.b.url"])
        #expect(unset.status == 1 && unset.stderr.contains("endpoints.b.url is not set"), "\(unset.stderr)")
    }

    @Test func unsetRemovesAGroupOfKeys() throws {
        for (key, value) in [("endpoints.p.url", "http://127.0.0.1:9/in"), ("endpoints.p.batchSize", "10"),
                             ("endpoints.p.headers.X-Key", "k"), ("endpoints.q.url", "http://127.0.0.1:9/q"),
                             ("privacy.precision", "CITY"), ("actions.login.mode", "disabled")] {
            try #require(config.run(["config", "set", key, value]).status == 0)
        }
        for group in ["endpoints.p", "privacy", "actions.login"] {
            let result = config.run(["config", "unset", group])
            #expect(result.status == 0, "\(group): \(result.stderr)")
        }
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: config.configPath))) as? [String: Any])
        #expect((document["endpoints"] as? [String: Any])?.keys.sorted() == ["q"])
        #expect(document["privacy"] == nil)
        #expect(document["actions"] == nil)
        #expect(config.run(["config", "unset", "endpoints.q.nonsense"]).status == 64)
        #expect(config.run(["config", "unset", "nonsense"]).status == 64)
    }

    @Test func refusedValuesNameTheValidOnes() throws {
        let mode = config.run(["config", "set", "actions.login.mode", "sometimes"])
        #expect(mode.status == 64)
        #expect(mode.stderr.contains("force-current"))
        let permission = config.run(["config", "set", "permissions", "precise"])
        #expect(permission.status == 64)
        #expect(permission.stderr.contains("fine, coarse, none"))
        let key = config.run(["config", "set", "colour", "blue"])
        #expect(key.status == 64)
        #expect(key.stderr.contains("unknown key 'colour'") && key.stderr.contains("geolocate config keys lists them"))
        #expect(!key.stderr.contains("actions.NAME.mode"), "a pointer, not the list of every key")
        #expect(!FileManager.default.fileExists(atPath: config.configPath))
    }

    @Test func invalidValueInFileNamesKeyAndLine() throws {
        try FileManager.default.createDirectory(at: config.home, withIntermediateDirectories: true)
        try "{\n  \"defaultInterval\": \"force-current\",\n  \"actions\": {\n    \"login\": { \"timeout\": \"soon\" }\n  }\n}\n"
            .write(toFile: config.configPath, atomically: true, encoding: .utf8)
        let result = config.run(["config", "validate"])
        #expect(result.status == 78)
        #expect(result.stderr.contains(":4:") && result.stderr.contains("actions.login.timeout"), "\(result.stderr)")
    }

    @Test func privacyKeysAreValidatedWithTheirDefaults() throws {
        #expect(config.run(["config", "get", "privacy.precision"]).stdout == "GPS_LOCATION\n")
        #expect(config.run(["config", "get", "privacy.countryCodeReplacement"]).stdout == "XB\n")
        #expect(config.run(["config", "get", "privacy.accuracyThreshold"]).stdout == "50\n")
        let refused = config.run(["config", "set", "privacy.precision", "town"])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("NONE, COUNTRY, DISTRICT, CITY, STREET, STREET_NUMBER, GPS_LOCATION"), "\(refused.stderr)")
        #expect(config.run(["config", "set", "privacy.countryCodeReplacement", "X1"]).status == 64)
        #expect(config.run(["config", "set", "privacy.locationAttributeFilter", "city,colour"]).status == 64)
        #expect(config.run(["config", "set", "geocoder.url", "nominatim"]).status == 64)
        #expect(config.run(["config", "set", "privacy.precision", "street_number"]).status == 0)
        #expect(config.run(["config", "get", "privacy.precision"]).stdout == "STREET_NUMBER\n")
        #expect(config.run(["config", "set", "privacy.locationAttributeFilter", "coordinates, city"]).status == 0)
        let filter = config.run(["config", "get", "privacy.locationAttributeFilter"]).stdout
        #expect(filter.contains("\"latitude\"") && filter.contains("\"longitude\"") && filter.contains("\"city\"") && !filter.contains("\"altitude\""))
        // The group: the file's values over the built-in defaults (before: "unknown key").
        let group = config.run(["config", "get", "privacy"])
        let members = try JSONSerialization.jsonObject(with: Data(group.stdout.utf8)) as? [String: Any]
        #expect(members?["precision"] as? String == "STREET_NUMBER", "\(group.stdout) \(group.stderr)")
        #expect(members?["accuracyThreshold"] as? Double == 50 && members?["countryCodeReplacement"] as? String == "XB")
        // A hand-edited file with a bad value is refused with its line.
        try "{\n  \"privacy\": {\n    \"precision\": \"TOWN\"\n  }\n}\n".write(toFile: config.configPath, atomically: true, encoding: .utf8)
        let invalid = config.run(["config", "validate"])
        #expect(invalid.status == 78 && invalid.stderr.contains(":3:"), "\(invalid.stderr)")
    }

    @Test func theExampleConfigurationIsValidAndRedacted() throws {
        let validated = config.run(["config", "validate", "--config", TestPaths.projectRoot.appendingPathComponent("Examples/config.json").path])
        #expect(validated.status == 0, "\(validated.stderr)")
        let settings = try ConfigStore(path: TestPaths.projectRoot.appendingPathComponent("Examples/config.json").path).settings()
        #expect(settings.endpoints.map(\.name) == ["audit", "primary"])
        #expect(settings.endpoints.last?.format == .openlocate && settings.endpoints.first?.format == .mosaicNDJSON)
        #expect(settings[ConfigKey.transmissionInterval] == 900_000)
        #expect(!settings.fields.deviceModel)
        #expect(settings.privacy.precision == .city && settings.privacy.attributeFilter.contains(.district))
        #expect(settings[ConfigKey.geocoderURL] == "http://localhost:8088" && settings[ConfigKey.geocoderMinInterval] == 60_000)
        let shown = config.run(["config", "show", "--config", TestPaths.projectRoot.appendingPathComponent("Examples/config.json").path])
        #expect(!shown.stdout.contains("replace-me"))
    }

    /// A6: integer keys refuse fractions and values out of range, naming the range; a file
    /// holding one is refused (78) by config validate and by every command.
    @Test(arguments: [
        ("spool.maxRecords", "0.5", "1 to 1000000000"), ("spool.maxRecords", "0", "1 to 1000000000"),
        ("spool.maxRecords", "1e12", "1 to 1000000000"), ("spool.maxRecords", "many", "1 to 1000000000"),
        ("endpoints.primary.batchSize", "2.5", "1 to 100000"), ("endpoints.primary.batchSize", "100001", "1 to 100000"),
        ("triggerActionQueryTimeout", "1500.5", "10 to 600000"), ("triggerActionQueryTimeout", "0", "10 to 600000"),
        ("triggerActionQueryTimeout", "11m", "10 to 600000"), ("triggerActionQueryTimeout", "9", "10 to 600000"),
        ("visits.radius", "1e308", "1 to 20000000"), ("privacy.accuracyThreshold", "0", "0.01 to 20000000"),
        ("visits.radius", "0x1p8", "1 to 20000000"), ("spool.maxRetention", "0x10d", "such as 1500ms"),
    ])
    func integerKeysRefuseFractionsAndOutOfRange(_ key: String, _ value: String, _ range: String) throws {
        let refused = config.run(["config", "set", key, value])
        #expect(refused.status == 64, "\(key) \(value): \(refused.stderr)")
        #expect(refused.stderr.contains(key) && refused.stderr.contains(range), "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1)
        #expect(!FileManager.default.fileExists(atPath: config.configPath))
    }

    @Test func integerKeysInRangeAreStoredAsWholeNumbers() throws {
        #expect(config.run(["config", "set", "spool.maxRecords", "1000"]).status == 0)
        #expect(config.run(["config", "get", "spool.maxRecords"]).stdout == "1000\n")
        #expect(config.run(["config", "set", "triggerActionQueryTimeout", "2s"]).status == 0)
        #expect(config.run(["config", "get", "triggerActionQueryTimeout"]).stdout == "2000\n")
        #expect(config.run(["config", "set", "endpoints.primary.batchSize", "100000"]).status == 0)
    }

    /// D16: an invalid mode in config names the valid modes.
    @Test(arguments: ["last-known:soon", "last-known:", "sometimes"])
    func anInvalidModeNamesTheValidOnes(_ mode: String) throws {
        let result = config.run(["config", "set", "defaultInterval", mode])
        #expect(result.status == 64)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        for valid in ["default", "disabled", "force-current", "force-last-known", "last-known:N", "90s", "30m", "2h"] {
            #expect(result.stderr.contains(valid), "\(valid) missing from \(result.stderr)")
        }
    }

    /// C10: lastKnownMaxAge, top level and per action, a duration like the other duration keys.
    @Test func lastKnownMaxAgeIsADuration() throws {
        #expect(config.run(["config", "get", "lastKnownMaxAge"]).status == 1)  // unset: unlimited
        #expect(config.run(["config", "set", "lastKnownMaxAge", "30m"]).status == 0)
        #expect(config.run(["config", "set", "actions.login.lastKnownMaxAge", "90s"]).status == 0)
        #expect(config.run(["config", "set", "actions.checkout.lastKnownMaxAge", "2h"]).status == 0)
        #expect(config.run(["config", "get", "lastKnownMaxAge"]).stdout == "30m\n")
        #expect(config.run(["config", "get", "actions.login.lastKnownMaxAge"]).stdout == "90s\n")
        #expect(config.run(["config", "validate"]).status == 0)
        let refused = config.run(["config", "set", "lastKnownMaxAge", "soon"])
        #expect(refused.status == 64 && refused.stderr.contains("lastKnownMaxAge"), "\(refused.stderr)")
        let settings = try ConfigStore(path: config.configPath).settings()
        #expect(settings[ConfigKey.lastKnownMaxAge] == 1_800_000)
        #expect(settings[ConfigKey.actionLastKnownMaxAge, name: "login"] == 90_000)
        #expect(settings[ConfigKey.actionLastKnownMaxAge, name: "checkout"] == 7_200_000)
        #expect(settings[ConfigKey.actionLastKnownMaxAge, name: "logout"] == nil)
        #expect(config.run(["config", "unset", "actions.login.lastKnownMaxAge"]).status == 0)
        #expect(try ConfigStore(path: config.configPath).settings()[ConfigKey.actionLastKnownMaxAge, name: "login"] == nil)
        // Hand-edited: a bad value is refused with its line.
        try "{\n  \"actions\": {\n    \"login\": { \"lastKnownMaxAge\": \"later\" }\n  }\n}\n"
            .write(toFile: config.configPath, atomically: true, encoding: .utf8)
        let invalid = config.run(["config", "validate"])
        #expect(invalid.status == 78 && invalid.stderr.contains(":3:") && invalid.stderr.contains("actions.login.lastKnownMaxAge"),
                "\(invalid.stderr)")
    }

    /// SPEC §7: a symlinked config file is written through the link (before, `set` replaced
    /// the link with a private copy), and an existing file keeps its mode (0644 became 0600).
    @Test func setWritesThroughASymlinkAndKeepsTheMode() throws {
        let managed = config.home.appendingPathComponent("managed")
        try FileManager.default.createDirectory(at: managed, withIntermediateDirectories: true)
        let target = managed.appendingPathComponent("config.json").path
        try "{}\n".write(toFile: target, atomically: true, encoding: .utf8)
        #expect(chmod(target, 0o644) == 0)
        #expect(symlink("managed/config.json", config.configPath) == 0)

        let set = config.run(["config", "set", "privacy.precision", "CITY"])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: config.configPath) == "managed/config.json")
        #expect(try String(contentsOfFile: target, encoding: .utf8).contains("CITY"))
        #expect(try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int == 0o644)
        #expect(config.run(["config", "get", "privacy.precision"]).stdout == "CITY\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: managed.path) == ["config.json"], "no temporary file left")

        // A plain 0644 file stays 0644; unset writes the same way.
        let plain = config.home.appendingPathComponent("plain.json").path
        try "{}\n".write(toFile: plain, atomically: true, encoding: .utf8)
        #expect(chmod(plain, 0o644) == 0)
        #expect(config.run(["config", "set", "permissions", "fine", "--config", plain]).status == 0)
        #expect(config.run(["config", "unset", "privacy", "--config", config.configPath]).status == 0)
        #expect(try FileManager.default.attributesOfItem(atPath: plain)[.posixPermissions] as? Int == 0o644)
        #expect(try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int == 0o644)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: config.configPath) == "managed/config.json")

        // reset keeps the old file beside the target and the link in place.
        let reset = config.run(["config", "reset"])
        #expect(reset.status == 0 && reset.stderr.contains(target + ".bak"), "\(reset.stderr)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: config.configPath) == "managed/config.json")
        #expect(FileManager.default.fileExists(atPath: target + ".bak"))
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "{}\n")
        #expect(try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int == 0o644)
    }

    /// `config show --all` is the configuration the commands use: every key, the file's values
    /// over the built-in ones; `config keys --markdown` is the table docs/REFERENCE.md carries.
    @Test func showAllAndTheKeysTable() throws {
        #expect(config.run(["config", "set", "spool.maxRecords", "5000"]).status == 0)
        #expect(config.run(["config", "set", "endpoints.a.url", "https://u:pw@example.org/in"]).status == 0)
        let shown = config.run(["config", "show", "--all"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
        #expect((document["spool"] as? [String: Any])?["maxRecords"] as? Int == 5000)
        #expect((document["spool"] as? [String: Any])?["maxRetention"] as? String == "10d")
        #expect(document["transmissionInterval"] as? String == "6h" && document["triggerActionQueryTimeout"] as? Int == 1500)
        let endpoint = try #require((document["endpoints"] as? [String: Any])?["a"] as? [String: Any])
        #expect(endpoint["batchSize"] as? Int == 500 && endpoint["format"] as? String == "openlocate")
        #expect(!shown.stdout.contains("pw@"))

        let table = config.run(["config", "keys", "--markdown"]).stdout
        let reference = try String(contentsOf: TestPaths.projectRoot.appendingPathComponent("docs/REFERENCE.md"), encoding: .utf8)
        #expect(reference.contains("<!-- config-keys:begin -->\n" + table + "<!-- config-keys:end -->"),
                "docs/REFERENCE.md's table of keys is not current: run make docs")
    }
}
