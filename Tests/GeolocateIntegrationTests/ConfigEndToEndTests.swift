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

@Suite(.tags(.integration), .timeLimit(.minutes(20))) struct ConfigEndToEndTests {
    let geolocate = GeolocateProcess()

    @Test func setGetUnsetRoundTrip() throws {
        #expect(try geolocate.run(["config", "set", "actions.checkout.mode", "last-known:30"]).status == 0)
        #expect(try geolocate.run(["config", "set", "actions.checkout.timeout", "2s"]).status == 0)
        #expect(try geolocate.run(["config", "set", "permissions", "fine,coarse"]).status == 0)
        #expect(try geolocate.run(["config", "set", "triggerActionQueryTimeout", "2500"]).status == 0)
        #expect(try geolocate.run(["config", "set", "source", "gpsd://127.0.0.1:2948"]).status == 0)
        #expect(try geolocate.run(["config", "set", "defaultInterval", "force-last-known"]).status == 0)
        // Stored in its one spelling: N minutes of last-known:N written with its unit.
        #expect(try geolocate.run(["config", "get", "actions.checkout.mode"]).stdout == "last-known:30m\n")
        #expect(try geolocate.run(["config", "get", "triggerActionQueryTimeout"]).stdout == "2500\n")
        let permissions = try geolocate.run(["config", "get", "permissions"]).stdout
        #expect(permissions.contains("\"fine\"") && permissions.contains("\"coarse\""))

        let attributes = try FileManager.default.attributesOfItem(atPath: geolocate.configPath)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)

        #expect(try geolocate.run(["config", "unset", "actions.checkout.mode"]).status == 0)
        #expect(try geolocate.run(["config", "get", "actions.checkout.mode"]).stdout == "force-current\n")  // built-in table
        #expect(try geolocate.run(["config", "get", "actions.checkout.timeout"]).stdout == "2s\n")
        #expect(try geolocate.run(["config", "validate"]).status == 0)
        #expect(try geolocate.run(["config", "path"]).stdout == geolocate.configPath + "\n")

        // Built-in values where the help names them; an empty list on one line; a key with
        // no value at all says so (before: exit 1 and nothing on either stream).
        #expect(try geolocate.run(["config", "get", "actions.foo.mode"]).stdout == "default\n")
        #expect(try geolocate.run(["config", "get", "endpoints.b.batchSize"]).stdout == "500\n")
        #expect(try geolocate.run(["config", "get", "endpoints.b.format"]).stdout == "openlocate\n")
        #expect(try geolocate.run(["config", "set", "permissions", "none"]).status == 0)
        #expect(try geolocate.run(["config", "get", "permissions"]).stdout == "[]\n")
        let unset = try geolocate.run(["config", "get", "endpoints.b.url"])
        #expect(unset.status == 1 && unset.stderr.contains("endpoints.b.url is not set"), "\(unset.stderr)")
    }

    /// A group of keys (an endpoint, an action, `privacy`) is unset whole; a key that names
    /// no group is still refused.
    /// After `--` every word is a value, a negative number too: a user name may be -5, and a
    /// negative duration is refused for what it is, not as a missing value.
    @Test func valuesAfterTheDoubleDashAreValues() throws {
        let set = try geolocate.run(["config", "set", "endpoints.c.username", "--", "-5"])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(try geolocate.run(["config", "get", "endpoints.c.username"]).stdout == "-5\n")
        let negative = try geolocate.run(["config", "set", "endpoints.c.timeout", "--", "-1m"])
        #expect(negative.status == 64)
        #expect(negative.stderr.contains("invalid duration '-1m' (use a duration "), "\(negative.stderr)")
        // A range that starts above 0 is told as it is, never "use 0 or more".
        let lifetime = try geolocate.run(["config", "set", "signing.tokenLifetime", "--", "-1s"])
        #expect(lifetime.status == 64 && lifetime.stderr.contains("(use a duration from 10s to 1h"), "\(lifetime.stderr)")
    }

    @Test func unsetRemovesAGroupOfKeys() throws {
        for (key, value) in [("endpoints.p.url", "http://127.0.0.1:9/in"), ("endpoints.p.batchSize", "10"),
                             ("endpoints.p.headers.X-Key", "k"), ("endpoints.q.url", "http://127.0.0.1:9/q"),
                             ("privacy.precision", "CITY"), ("actions.login.mode", "disabled")] {
            try #require(try geolocate.run(["config", "set", key, value]).status == 0)
        }
        for group in ["endpoints.p", "privacy", "actions.login"] {
            let result = try geolocate.run(["config", "unset", group])
            #expect(result.status == 0, "\(group): \(result.stderr)")
        }
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: geolocate.configPath))) as? [String: Any])
        #expect((document["endpoints"] as? [String: Any])?.keys.sorted() == ["q"])
        #expect(document["privacy"] == nil)
        #expect(document["actions"] == nil)
        #expect(try geolocate.run(["config", "unset", "endpoints.q.nonsense"]).status == 64)
        #expect(try geolocate.run(["config", "unset", "nonsense"]).status == 64)
    }

    @Test func refusedValuesNameTheValidOnes() throws {
        let mode = try geolocate.run(["config", "set", "actions.login.mode", "sometimes"])
        #expect(mode.status == 64)
        #expect(mode.stderr.contains("force-current"))
        let permission = try geolocate.run(["config", "set", "permissions", "precise"])
        #expect(permission.status == 64)
        #expect(permission.stderr.contains("fine, coarse, none"))
        let key = try geolocate.run(["config", "set", "colour", "blue"])
        #expect(key.status == 64)
        #expect(key.stderr.contains("unknown key 'colour'") && key.stderr.contains("geolocate config keys lists them"))
        #expect(!key.stderr.contains("actions.NAME.mode"), "a pointer, not the list of every key")
        #expect(!FileManager.default.fileExists(atPath: geolocate.configPath))
    }

    @Test func corruptFileIsNeverOverwritten() throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let corrupt = "{\n  \"permissions\": [\"fine\"],\n  \"actions\": {\n    \"login\": { \"mode\": force }\n  }\n}\n"
        try corrupt.write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)

        for arguments in [["config", "set", "permissions", "coarse"], ["config", "validate"], ["config", "show"],
                          ["trigger", "login", "--replay", "Examples/nmea/kiosk-gnss.nmea"]] {
            let result = try geolocate.run(arguments)
            #expect(result.status == 78, "\(arguments)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains(geolocate.configPath + ":4"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1)
        }
        #expect(try String(contentsOfFile: geolocate.configPath, encoding: .utf8) == corrupt)

        #expect(try geolocate.run(["config", "reset"]).status == 0)
        #expect(try String(contentsOfFile: geolocate.configPath + ".bak", encoding: .utf8) == corrupt)
        #expect(try geolocate.run(["config", "validate"]).status == 0)
    }

    @Test func invalidValueInFileNamesKeyAndLine() throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        try "{\n  \"defaultInterval\": \"force-current\",\n  \"actions\": {\n    \"login\": { \"timeout\": \"soon\" }\n  }\n}\n"
            .write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)
        let result = try geolocate.run(["config", "validate"])
        #expect(result.status == 78)
        #expect(result.stderr.contains(":4:") && result.stderr.contains("actions.login.timeout"), "\(result.stderr)")
    }

    /// A key given twice is refused at any depth: Foundation kept the first copy
    /// (GPS_LOCATION, fine) where jq and Python keep the last (CITY, none), and
    /// `config validate` said ok.
    @Test(arguments: [
        ("{\"privacy\": {\"precision\": \"GPS_LOCATION\",\n  \"precision\": \"CITY\"}}\n", "privacy.precision", 2),
        ("{\"permissions\": [\"fine\"],\n\n \"permissions\": []}\n", "permissions", 3),
        ("{\"endpoints\": {\"p\": {\"url\": \"http://127.0.0.1:9/in\", \"headers\": {\"X-Key\": \"a\", \"X-Key\": \"b\"}}}}\n", "endpoints.p.headers.X-Key", 1),
    ])
    func aDuplicateKeyIsRefusedWithItsPathAndLine(_ content: String, _ key: String, _ line: Int) throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        try content.write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)
        for arguments in [["config", "validate"], ["config", "show"], ["config", "set", "privacy.precision", "CITY"],
                          ["trigger", "login", "--replay", GeolocateProcess.example("kiosk-gnss.nmea")]] {
            let result = try geolocate.run(arguments)
            #expect(result.status == 78 && result.stdout.isEmpty, "\(arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1)
            #expect(result.stderr.contains("\(geolocate.configPath):\(line): duplicate key '\(key)'"), "\(result.stderr)")
        }
        #expect(try String(contentsOfFile: geolocate.configPath, encoding: .utf8) == content, "never written over")
    }

    @Test func privacyKeysAreValidatedWithTheirDefaults() throws {
        #expect(try geolocate.run(["config", "get", "privacy.precision"]).stdout == "GPS_LOCATION\n")
        #expect(try geolocate.run(["config", "get", "privacy.countryCodeReplacement"]).stdout == "XB\n")
        #expect(try geolocate.run(["config", "get", "privacy.accuracyThreshold"]).stdout == "50\n")
        let refused = try geolocate.run(["config", "set", "privacy.precision", "town"])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("NONE, COUNTRY, DISTRICT, CITY, STREET, STREET_NUMBER, GPS_LOCATION"), "\(refused.stderr)")
        #expect(try geolocate.run(["config", "set", "privacy.countryCodeReplacement", "X1"]).status == 64)
        #expect(try geolocate.run(["config", "set", "privacy.locationAttributeFilter", "city,colour"]).status == 64)
        #expect(try geolocate.run(["config", "set", "geocoder.url", "nominatim"]).status == 64)
        #expect(try geolocate.run(["config", "set", "privacy.precision", "street_number"]).status == 0)
        #expect(try geolocate.run(["config", "get", "privacy.precision"]).stdout == "STREET_NUMBER\n")
        #expect(try geolocate.run(["config", "set", "privacy.locationAttributeFilter", "coordinates, city"]).status == 0)
        let filter = try geolocate.run(["config", "get", "privacy.locationAttributeFilter"]).stdout
        #expect(filter.contains("\"latitude\"") && filter.contains("\"longitude\"") && filter.contains("\"city\"") && !filter.contains("\"altitude\""))
        // The group: the file's values over the built-in defaults (before: "unknown key").
        let group = try geolocate.run(["config", "get", "privacy"])
        let members = try JSONSerialization.jsonObject(with: Data(group.stdout.utf8)) as? [String: Any]
        #expect(members?["precision"] as? String == "STREET_NUMBER", "\(group.stdout) \(group.stderr)")
        #expect(members?["accuracyThreshold"] as? Double == 50 && members?["countryCodeReplacement"] as? String == "XB")
        // A hand-edited file with a bad value is refused with its line.
        try "{\n  \"privacy\": {\n    \"precision\": \"TOWN\"\n  }\n}\n".write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)
        let invalid = try geolocate.run(["config", "validate"])
        #expect(invalid.status == 78 && invalid.stderr.contains(":3:"), "\(invalid.stderr)")
    }

    @Test func theExampleConfigurationIsValidAndRedacted() throws {
        let validated = try geolocate.run(["config", "validate", "--config", "Examples/config.json"])
        #expect(validated.status == 0, "\(validated.stderr)")
        let settings = try ConfigStore(path: GeolocateProcess.projectRoot.appendingPathComponent("Examples/config.json").path).settings()
        #expect(settings.endpoints.map(\.name) == ["audit", "primary"])
        #expect(settings.endpoints.last?.format == .openlocate && settings.endpoints.first?.format == .mosaicNDJSON)
        #expect(settings[ConfigKey.transmissionInterval] == 900_000)
        #expect(!settings.fields.deviceModel)
        #expect(settings.privacy.precision == .city && settings.privacy.attributeFilter.contains(.district))
        #expect(settings[ConfigKey.geocoderURL] == "http://localhost:8088" && settings[ConfigKey.geocoderMinInterval] == 60_000)
        let shown = try geolocate.run(["config", "show", "--config", "Examples/config.json"])
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
        let refused = try geolocate.run(["config", "set", key, value])
        #expect(refused.status == 64, "\(key) \(value): \(refused.stderr)")
        #expect(refused.stderr.contains(key) && refused.stderr.contains(range), "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1)
        #expect(!FileManager.default.fileExists(atPath: geolocate.configPath))
    }

    @Test func integerKeysInRangeAreStoredAsWholeNumbers() throws {
        #expect(try geolocate.run(["config", "set", "spool.maxRecords", "1000"]).status == 0)
        #expect(try geolocate.run(["config", "get", "spool.maxRecords"]).stdout == "1000\n")
        #expect(try geolocate.run(["config", "set", "triggerActionQueryTimeout", "2s"]).status == 0)
        #expect(try geolocate.run(["config", "get", "triggerActionQueryTimeout"]).stdout == "2000\n")
        #expect(try geolocate.run(["config", "set", "endpoints.primary.batchSize", "100000"]).status == 0)
    }

    @Test(arguments: [
        #"{"spool": {"maxRecords": 0.5}}"#, #"{"spool": {"maxRecords": 0}}"#,
        #"{"endpoints": {"primary": {"url": "http://127.0.0.1:9/x", "batchSize": 1.5}}}"#,
        #"{"triggerActionQueryTimeout": 1e300}"#, #"{"lastKnownMaxAge": 1e300}"#,
        #"{"visits": {"radius": 1e308}}"#,
    ])
    func anOutOfRangeNumberInTheFileIsAConfigurationError(_ text: String) throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        try text.write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)
        for arguments in [["config", "validate"], ["trigger", "login", "--replay", "Examples/nmea/kiosk-gnss.nmea"]] {
            let result = try geolocate.run(arguments)
            #expect(result.status == 78, "\(arguments) with \(text): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains(geolocate.configPath + ":1:"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1)
        }
    }

    /// D16: an invalid mode in config names the valid modes.
    @Test(arguments: ["last-known:soon", "last-known:", "sometimes"])
    func anInvalidModeNamesTheValidOnes(_ mode: String) throws {
        let result = try geolocate.run(["config", "set", "defaultInterval", mode])
        #expect(result.status == 64)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        for valid in ["default", "disabled", "force-current", "force-last-known", "last-known:N", "90s", "30m", "2h"] {
            #expect(result.stderr.contains(valid), "\(valid) missing from \(result.stderr)")
        }
    }

    /// C10: lastKnownMaxAge, top level and per action, a duration like the other duration keys.
    @Test func lastKnownMaxAgeIsADuration() throws {
        #expect(try geolocate.run(["config", "get", "lastKnownMaxAge"]).status == 1)  // unset: unlimited
        #expect(try geolocate.run(["config", "set", "lastKnownMaxAge", "30m"]).status == 0)
        #expect(try geolocate.run(["config", "set", "actions.login.lastKnownMaxAge", "90s"]).status == 0)
        #expect(try geolocate.run(["config", "set", "actions.checkout.lastKnownMaxAge", "2h"]).status == 0)
        #expect(try geolocate.run(["config", "get", "lastKnownMaxAge"]).stdout == "30m\n")
        #expect(try geolocate.run(["config", "get", "actions.login.lastKnownMaxAge"]).stdout == "90s\n")
        #expect(try geolocate.run(["config", "validate"]).status == 0)
        let refused = try geolocate.run(["config", "set", "lastKnownMaxAge", "soon"])
        #expect(refused.status == 64 && refused.stderr.contains("lastKnownMaxAge"), "\(refused.stderr)")
        let settings = try ConfigStore(path: geolocate.configPath).settings()
        #expect(settings[ConfigKey.lastKnownMaxAge] == 1_800_000)
        #expect(settings[ConfigKey.actionLastKnownMaxAge, name: "login"] == 90_000)
        #expect(settings[ConfigKey.actionLastKnownMaxAge, name: "checkout"] == 7_200_000)
        #expect(settings[ConfigKey.actionLastKnownMaxAge, name: "logout"] == nil)
        #expect(try geolocate.run(["config", "unset", "actions.login.lastKnownMaxAge"]).status == 0)
        #expect(try ConfigStore(path: geolocate.configPath).settings()[ConfigKey.actionLastKnownMaxAge, name: "login"] == nil)
        // Hand-edited: a bad value is refused with its line.
        try "{\n  \"actions\": {\n    \"login\": { \"lastKnownMaxAge\": \"later\" }\n  }\n}\n"
            .write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)
        let invalid = try geolocate.run(["config", "validate"])
        #expect(invalid.status == 78 && invalid.stderr.contains(":3:") && invalid.stderr.contains("actions.login.lastKnownMaxAge"),
                "\(invalid.stderr)")
    }

    /// A header value with a stray CR, or a header name that is no token, is refused without
    /// echoing the secret; get redacts as show does.
    @Test func headersAreCheckedAndSecretsRedacted() throws {
        let crlf = try geolocate.run(["config", "set", "endpoints.a.headers.Authorization", "Bearer T0KEN\r"])
        #expect(crlf.status == 64 && crlf.stderr.contains("CR") && !crlf.stderr.contains("T0KEN"), "\(crlf.stderr)")
        let name = try geolocate.run(["config", "set", "endpoints.a.headers.Bad Name", "x"])
        #expect(name.status == 64, "\(name.stderr)")

        #expect(try geolocate.run(["config", "set", "endpoints.a.url", "https://bob:PW@example.org/in?token=TK"]).status == 0)
        #expect(try geolocate.run(["config", "set", "endpoints.a.headers.Authorization", "Bearer T0KEN"]).status == 0)
        for key in ["endpoints", "endpoints.a", "endpoints.a.url", "endpoints.a.headers.Authorization"] {
            let got = try geolocate.run(["config", "get", key])
            #expect(got.status == 0 && !got.stdout.contains("T0KEN") && !got.stdout.contains("PW@") && !got.stdout.contains("TK"), "\(got.stdout)")
        }
        #expect(try geolocate.run(["config", "get", "--show-secrets", "endpoints.a.headers.Authorization"]).stdout == "Bearer T0KEN\n")

        // Reserved headers, names commands could not use, ports NIO would trap on, control
        // characters in a URL: all refused at set (before: accepted, then 132 at flush).
        for refused in [["endpoints.a.headers.Idempotency-Key", "fixed"], ["endpoints.a.headers.host", "evil.example"],
                        ["endpoints.a.url", "http://127.0.0.1:99999/"], ["endpoints.a.url", "http://127.0.0.1:65536/"],
                        ["endpoints.a.url", "http://h/a\r\nX-Injected: yes"], ["geocoder.url", "http://127.0.0.1:0/"],
                        ["endpoints.a b.url", "http://h/"], ["endpoints.zz\u{1B}[31m.url", "http://h/"],
                        ["actions.lo\ngin.mode", "force-current"], ["actions.login.timeout", "700s"]] {
            let result = try geolocate.run(["config", "set"] + refused)
            #expect(result.status == 64, "\(refused): \(result.stderr)")
        }
        for timeout in ["600001ms", "100d"] {
            let flag = try geolocate.run(["trigger", "login", "--timeout", timeout])
            #expect(flag.status == 64 && flag.stderr.contains("10m"), "--timeout \(timeout): \(flag.stderr)")
        }
        // Header names are case-insensitive: a second spelling replaces the first.
        #expect(try geolocate.run(["config", "set", "endpoints.h.url", "https://example.org/in"]).status == 0)
        #expect(try geolocate.run(["config", "set", "endpoints.h.headers.Authorization", "Bearer ONE"]).status == 0)
        #expect(try geolocate.run(["config", "set", "endpoints.h.headers.authorization", "Bearer TWO"]).status == 0)
        let headers = try geolocate.run(["config", "get", "--show-secrets", "endpoints.h.headers"]).stdout
        #expect(headers.contains("TWO") && !headers.contains("ONE") && !headers.contains("\"Authorization\""), "\(headers)")
        // Fragments and OAuth-style parameters are secrets too.
        #expect(try geolocate.run(["config", "set", "endpoints.f.url", "https://example.org/in?jwt=J1&code=C1#access_token=F1"]).status == 0)
        let fragment = try geolocate.run(["config", "get", "endpoints.f.url"])
        #expect(!fragment.stdout.contains("J1") && !fragment.stdout.contains("C1") && !fragment.stdout.contains("F1"), "\(fragment.stdout)")

        // A URL refused for its scheme is quoted without its secrets too.
        for refused in [["config", "set", "endpoints.b.url", "ftp://bob:PW@example.org/in?token=TK"],
                        ["config", "set", "geocoder.url", "ftp://bob:PW@example.org/?api_key=TK"],
                        ["trigger", "login", "--post", "ftp://bob:PW@example.org/in?token=TK"]] {
            let result = try geolocate.run(refused)
            #expect(result.status == 64 && result.stderr.contains("invalid URL") && !result.stderr.contains("PW") && !result.stderr.contains("TK"),
                    "\(refused): \(result.stderr)")
        }

        try Data(#"{"endpoints":{"a":{"url":"https://example.org/","headers":{"X-Key":"v\r\n"}}}}"#.utf8)
            .write(to: URL(fileURLWithPath: geolocate.configPath))
        let validate = try geolocate.run(["config", "validate"])
        #expect(validate.status == 78 && validate.stderr.contains("X-Key"), "\(validate.stderr)")
    }

    /// SPEC §7: a symlinked config file is written through the link (before, `set` replaced
    /// the link with a private copy), and an existing file keeps its mode (0644 became 0600).
    @Test func setWritesThroughASymlinkAndKeepsTheMode() throws {
        let managed = geolocate.home.appendingPathComponent("managed")
        try FileManager.default.createDirectory(at: managed, withIntermediateDirectories: true)
        let target = managed.appendingPathComponent("config.json").path
        try "{}\n".write(toFile: target, atomically: true, encoding: .utf8)
        #expect(chmod(target, 0o644) == 0)
        #expect(symlink("managed/config.json", geolocate.configPath) == 0)

        let set = try geolocate.run(["config", "set", "privacy.precision", "CITY"])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: geolocate.configPath) == "managed/config.json")
        #expect(try String(contentsOfFile: target, encoding: .utf8).contains("CITY"))
        #expect(try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int == 0o644)
        #expect(try geolocate.run(["config", "get", "privacy.precision"]).stdout == "CITY\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: managed.path) == ["config.json"], "no temporary file left")

        // A plain 0644 file stays 0644; unset writes the same way.
        let plain = geolocate.home.appendingPathComponent("plain.json").path
        try "{}\n".write(toFile: plain, atomically: true, encoding: .utf8)
        #expect(chmod(plain, 0o644) == 0)
        #expect(try geolocate.run(["config", "set", "permissions", "fine", "--config", plain]).status == 0)
        #expect(try geolocate.run(["config", "unset", "privacy", "--config", geolocate.configPath]).status == 0)
        #expect(try FileManager.default.attributesOfItem(atPath: plain)[.posixPermissions] as? Int == 0o644)
        #expect(try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int == 0o644)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: geolocate.configPath) == "managed/config.json")

        // reset keeps the old file beside the target and the link in place.
        let reset = try geolocate.run(["config", "reset"])
        #expect(reset.status == 0 && reset.stderr.contains(target + ".bak"), "\(reset.stderr)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: geolocate.configPath) == "managed/config.json")
        #expect(FileManager.default.fileExists(atPath: target + ".bak"))
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "{}\n")
        #expect(try FileManager.default.attributesOfItem(atPath: target)[.posixPermissions] as? Int == 0o644)
    }

    /// Keys are dotted, so a dot in an endpoint, action or header name made a key no command
    /// could reach; before, such names passed in a file and in `trigger`, and `set` said
    /// "unknown key". One rule now: no dots in names, said wherever a name is given.
    @Test func namesWithDotsAreRefusedEverywhere() throws {
        let trigger = try geolocate.run(["trigger", "check.out", "--replay", GeolocateProcess.example("kiosk-gnss.nmea")])
        #expect(trigger.status == 64 && trigger.stdout.isEmpty, "\(trigger.stderr)")
        #expect(trigger.stderr.contains("invalid action name 'check.out'") && trigger.stderr.contains("no dots"), "\(trigger.stderr)")
        for (key, value, message) in [("endpoints.eu.west.url", "http://127.0.0.1:9/in", "'eu.west' is not an endpoint name"),
                                      ("actions.check.out.mode", "disabled", "'check.out' is not an action name"),
                                      ("endpoints.p.headers.X.Api.Key", "k", "header name 'X.Api.Key' has a dot")] {
            let set = try geolocate.run(["config", "set", key, value])
            #expect(set.status == 64 && set.stderr.contains(message) && set.stderr.split(separator: "\n").count == 1, "\(key): \(set.stderr)")
            #expect(try geolocate.run(["config", "get", key]).stderr.contains(message))
        }
        #expect(!FileManager.default.fileExists(atPath: geolocate.configPath))

        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        for (content, message) in [
            ("{\"endpoints\": {\n  \"eu.west\": {\"url\": \"http://127.0.0.1:9/in\"}}}\n", ":2: endpoints.eu.west.url: 'eu.west' is not an endpoint name"),
            ("{\"actions\": {\"check.out\": {\"mode\": \"disabled\"}}}\n", ":1: actions.check.out.mode: 'check.out' is not an action name"),
            ("{\"endpoints\": {\"p\": {\"url\": \"http://127.0.0.1:9/in\",\n \"headers\": {\"X.Api.Key\": \"k\"}}}}\n", ":2: endpoints.p.headers.X.Api.Key: header name 'X.Api.Key' has a dot"),
        ] {
            try content.write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)
            for arguments in [["config", "validate"], ["flush"]] {
                let result = try geolocate.run(arguments)
                #expect(result.status == 78 && result.stdout.isEmpty, "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains(geolocate.configPath + message), "\(result.stderr)")
            }
        }
    }

    /// Symlinks planted under the temporary names earlier versions used (`.NAME.PID.tmp`, for
    /// the next 3000 process ids) are never written through: the victim keeps its content and mode.
    @Test func plantedSymlinksAreNeverFollowed() throws {
        let directory = geolocate.home.path
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        let victim = geolocate.home.appendingPathComponent("victim").path
        try Data("precious\n".utf8).write(to: URL(fileURLWithPath: victim))
        chmod(victim, 0o644)
        let lastPID = Int(try String(contentsOfFile: "/proc/sys/kernel/ns_last_pid", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        for pid in lastPID + 1...lastPID + 3000 {
            symlink(victim, directory + "/.config.json.\(pid).tmp")
            symlink(victim, geolocate.stateDirectory + "/.last-known-replay.json.\(pid).tmp")
        }
        #expect(try geolocate.run(["config", "set", "permissions", "fine"]).status == 0)
        #expect(try geolocate.run(["trigger", "login", "--replay", GeolocateProcess.example("kiosk-gnss.nmea")]).status == 0)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        #expect(try FileManager.default.attributesOfItem(atPath: victim)[.posixPermissions] as? Int == 0o644)
        #expect(FileManager.default.fileExists(atPath: geolocate.stateDirectory + "/last-known-replay.json"))
    }

    /// The one unit rule through the binary: every duration flag refuses a bare number with
    /// both readings offered, and takes it with a unit.
    @Test(arguments: [["trigger", "login", "--timeout"], ["track", "--stdout", "--no-spool", "--interval"],
                      ["track", "--stdout", "--no-spool", "--duration"], ["track", "--stdout", "--no-spool", "--transmit-interval"]])
    func aBareNumberOnADurationFlagIsRefused(_ command: [String]) throws {
        let flag = command.last!
        let bare = try geolocate.run(command + ["90"])
        #expect(bare.status == 64 && bare.stdout.isEmpty, "\(bare.stderr)")
        #expect(bare.stderr == "geolocate: \(flag): invalid duration '90': say its unit, such as 90ms or 90s (see 'geolocate \(command[0]) --help')\n",
                "\(bare.stderr)")
        let kiosk = GeolocateProcess.example("kiosk-gnss.nmea")
        let withUnit = try geolocate.run(command + ["90s", "--replay", kiosk, "--permission", "fine"] + (command[0] == "track" ? ["--count", "1"] : []))
        #expect(withUnit.status == 0, "\(withUnit.stderr)")
    }

    /// `config show --all` is the configuration the commands use: every key, the file's values
    /// over the built-in ones; `config keys --markdown` is the table docs/REFERENCE.md carries.
    @Test func showAllAndTheKeysTable() throws {
        #expect(try geolocate.run(["config", "set", "spool.maxRecords", "5000"]).status == 0)
        #expect(try geolocate.run(["config", "set", "endpoints.a.url", "https://u:pw@example.org/in"]).status == 0)
        let shown = try geolocate.run(["config", "show", "--all"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
        #expect((document["spool"] as? [String: Any])?["maxRecords"] as? Int == 5000)
        #expect((document["spool"] as? [String: Any])?["maxRetention"] as? String == "10d")
        #expect(document["transmissionInterval"] as? String == "6h" && document["triggerActionQueryTimeout"] as? Int == 1500)
        let endpoint = try #require((document["endpoints"] as? [String: Any])?["a"] as? [String: Any])
        #expect(endpoint["batchSize"] as? Int == 500 && endpoint["format"] as? String == "openlocate")
        #expect(!shown.stdout.contains("pw@"))

        let table = try geolocate.run(["config", "keys", "--markdown"]).stdout
        let reference = try String(contentsOf: GeolocateProcess.projectRoot.appendingPathComponent("docs/REFERENCE.md"), encoding: .utf8)
        #expect(reference.contains("<!-- config-keys:begin -->\n" + table + "<!-- config-keys:end -->"),
                "docs/REFERENCE.md's table of keys is not current: run make docs")
    }

    /// Found by the hostile pass: a source's credentials never reach a message, a host with
    /// control characters is refused, and `--now` stops at the year 9999.
    @Test func sourceSecretsAndAbsurdTimesAreRefusedCleanly() throws {
        for command in [["config", "set", "source", "gpsd://u:SEKRIT@h:99999"], ["trigger", "login", "--source", "gpsd://u:SEKRIT@h:0"]] {
            let result = try geolocate.run(command)
            #expect(result.status == 64 && !result.stderr.contains("SEKRIT") && result.stderr.contains("***"), "\(command): \(result.stderr)")
        }
        for host in ["gpsd://h\n:1", "gpsd://h h:1", "gpsd://h\t:1"] {
            #expect(try geolocate.run(["config", "set", "source", host]).status == 64, "\(host)")
        }
        let late = try geolocate.run(["trigger", "login", "--now", "9223372036854775807"])
        #expect(late.status == 64 && late.stdout.isEmpty && late.stderr.contains("--now"), "\(late.stderr)")
        let latest = try geolocate.run(["trigger", "login", "--now", "253402300799999", "--mode", "disabled"])
        #expect(latest.status == 0, "\(latest.stderr)")
    }
}
