import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §14 in a real PAM stack: `pamtester` runs `trigger login --pam` through `pam_exec`,
/// as sshd would, with the shipped `Examples/pam/config.json` (its zones path pointed at a
/// copy); the decision is pamtester's verdict and the syslog line, captured at `/dev/log`.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .enabled(if: PAMStack.isAvailable, "needs root"))
struct PAMEndToEndTests {
    let geolocate = GeolocateProcess()
    static let items = ["rhost=10.1.2.3", "tty=ssh"]
    /// `Examples/nmea/kiosk-gnss.nmea` starts at 2026-11-21 14:30:00 UTC, inside lyon-office.
    static let kiosk = GeolocateProcess.projectRoot.appendingPathComponent(GeolocateProcess.example("kiosk-gnss.nmea")).path

    /// A fresh fix in Paris, outside every zone of the example.
    var outside: String {
        get throws {
            try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
            let path = geolocate.home.appendingPathComponent("paris.nmea").path
            try NMEAText.fixes(latitude: 48.8566, longitude: 2.3522, date: "211126", time: "143000").write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
    }

    /// Writes the shipped PAM example config (zones from a copy of the shipped zones file),
    /// changed by `edit`, and returns its path.
    @discardableResult
    func writeConfig(_ edit: (inout [String: Any]) -> Void = { _ in }) throws -> String {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let examples = GeolocateProcess.projectRoot.appendingPathComponent("Examples/pam")
        let zones = geolocate.home.appendingPathComponent("zones.geojson").path
        if !FileManager.default.fileExists(atPath: zones) {
            try FileManager.default.copyItem(atPath: examples.appendingPathComponent("zones.geojson").path, toPath: zones)
        }
        var config = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: examples.appendingPathComponent("config.json"))) as? [String: Any])
        var policy = try #require(config["policy"] as? [String: Any])
        #expect(policy["zones"] as? String == "/etc/geolocate/zones.geojson", "the example names an absolute zones path")
        policy["zones"] = zones
        config["policy"] = policy
        edit(&config)
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: geolocate.configPath))
        return geolocate.configPath
    }

    func hookArguments(replay: String, _ extra: [String] = []) -> [String] {
        ["trigger", "login", "--pam", "--config", geolocate.configPath, "--state-dir", geolocate.stateDirectory, "--replay", replay] + extra
    }

    func login(replay: String, _ extra: [String] = [], user: String = "alice", operation: String = "acct_mgmt") throws -> PAMStack.Outcome {
        let service = PAMStack.service(binary: GeolocateProcess.binary.path, arguments: hookArguments(replay: replay, extra))
        return try PAMStack.run(service: service, user: user, operation: operation, items: Self.items, in: geolocate.home)
    }

    /// The single decision line, checked for what every decision line must be: one, from
    /// geolocate, with no coordinates, and nothing shown to the person logging in.
    func decisionLine(_ outcome: PAMStack.Outcome, priority: Int) throws -> String {
        #expect(outcome.decisionLines.count == 1, "\(outcome.log)")
        let line = try #require(outcome.decisionLines.first, "\(outcome.log)")
        #expect(line.hasPrefix("<\(10 * 8 + priority)>"), "authpriv at priority \(priority): \(line)")
        for coordinate in ["45.7", "4.83", "48.8", "2.35"] { #expect(!line.contains(coordinate), "no coordinates: \(line)") }
        #expect(!outcome.conversation.contains("{") && !outcome.conversation.contains("geolocate"), "silent: \(outcome.conversation)")
        return line
    }

    @Test(arguments: ["authenticate", "acct_mgmt"]) func allowsAFreshFixInsideAnAllowZone(_ operation: String) throws {
        try writeConfig()
        let outcome = try login(replay: Self.kiosk, operation: operation)
        #expect(outcome.status == 0, "\(outcome.conversation) \(outcome.log)")
        let line = try decisionLine(outcome, priority: 5)
        for field in [#"login user="alice""#, #"rhost="10.1.2.3""#, #"tty="ssh""#, "decision=allow", #"reason="insideAllowZone""#,
                      #"zone="lyon-office""#, " record="] {
            #expect(line.contains(field), "\(field) in \(line)")
        }
    }

    @Test(arguments: ["authenticate", "acct_mgmt"]) func deniesOutsideTheZones(_ operation: String) throws {
        try writeConfig()
        let outcome = try login(replay: try outside, operation: operation)
        #expect(outcome.status != 0)
        let line = try decisionLine(outcome, priority: 4)
        #expect(line.contains(#"decision=deny reason="outsideAllowZones""#), "\(line)")
    }

    @Test(arguments: ["authenticate", "acct_mgmt"]) func deniesAStaleFix(_ operation: String) throws {
        try writeConfig()
        let outcome = try login(replay: Self.kiosk, ["--now", "2026-11-22T14:30:00Z"], operation: operation)
        #expect(outcome.status != 0)
        #expect(try decisionLine(outcome, priority: 4).contains(#"decision=deny reason="tooOld""#))
    }

    @Test(arguments: ["authenticate", "acct_mgmt"]) func deniesASpoofedFix(_ operation: String) throws {
        try writeConfig()
        let spoofed = geolocate.home.appendingPathComponent("spoofed.nmea").path
        try Tool.run(["python3", GeolocateProcess.projectRoot.appendingPathComponent("Tests/GeolocateIntegrationTests/Support/spoof-nmea.py").path,
                      "--in", Self.kiosk, "--out", spoofed, "--from-epoch", "0", "--jump-km", "0"])
        let outcome = try login(replay: spoofed, operation: operation)
        #expect(outcome.status != 0)
        #expect(try decisionLine(outcome, priority: 4).contains(#"decision=deny reason="distrustedSpoofingSuspected""#))
    }

    @Test(arguments: ["authenticate", "acct_mgmt"]) func failsClosedOnABrokenConfigOrZonesFile(_ operation: String) throws {
        try writeConfig()
        try Data(#"{"permissions": ["fine"], "policy": {"#.utf8).write(to: URL(fileURLWithPath: geolocate.configPath))
        let broken = try login(replay: Self.kiosk, operation: operation)
        #expect(broken.status != 0)
        let line = try decisionLine(broken, priority: 3)
        #expect(line.contains(#"decision=deny reason="cannot decide (policy.onError deny): "#), "\(line)")

        try writeConfig()
        try Data("not geojson".utf8).write(to: geolocate.home.appendingPathComponent("zones.geojson"))
        let zones = try login(replay: Self.kiosk, operation: operation)
        #expect(zones.status != 0)
        #expect(try decisionLine(zones, priority: 3).contains("zones.geojson"))
    }

    @Test(arguments: ["authenticate", "acct_mgmt"]) func onErrorAllowLetsABrokenConfigThrough(_ operation: String) throws {
        try writeConfig { config in
            var policy = config["policy"] as? [String: Any] ?? [:]
            policy["onError"] = "allow"
            config["policy"] = policy
            config["defaultInterval"] = "sometimes"
        }
        let outcome = try login(replay: try outside, operation: operation)
        #expect(outcome.status == 0, "\(outcome.log)")
        let line = try decisionLine(outcome, priority: 4)
        #expect(line.contains(#"decision=allow reason="cannot decide (policy.onError allow): "#), "\(line)")
        #expect(line.contains("defaultInterval"), "\(line)")
    }

    @Test func refusesAConfigOtherUsersCanWriteWhateverItSays() throws {
        try writeConfig { config in
            var policy = config["policy"] as? [String: Any] ?? [:]
            policy["onError"] = "allow"
            config["policy"] = policy
        }
        chmod(geolocate.configPath, 0o666)
        let outcome = try login(replay: Self.kiosk)
        #expect(outcome.status != 0)
        let line = try decisionLine(outcome, priority: 3)
        #expect(line.contains("writable by every user"), "\(line)")
    }

    @Test func valuesFromPAMStayOneQuotedFieldOfAtMost256Bytes() throws {
        try writeConfig()
        let user = #"x" decision=allow reason="insideAllowZone"#
        let outcome = try login(replay: try outside, user: user)
        #expect(outcome.status != 0)
        let line = try decisionLine(outcome, priority: 4)
        #expect(line.contains(#"user="x\" decision=allow reason=\"insideAllowZone""#), "\(line)")
        #expect(PAMStack.unquoted(line).components(separatedBy: " decision=").count == 2, "one decision field: \(line)")

        let long = try login(replay: try outside, user: String(repeating: "u", count: 300))
        let longLine = try decisionLine(long, priority: 4)
        #expect(longLine.contains("user=\"\(String(repeating: "u", count: 256))\" "), "\(longLine)")
    }

    @Test func theRecordCarriesItsSubjectToTheActionsEndpoint() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try writeConfig { config in
            config["endpoints"] = ["audit": ["url": collector.url("/audit"), "format": "mosaic"]]
            var actions = config["actions"] as? [String: Any] ?? [:]
            var login = actions["login"] as? [String: Any] ?? [:]
            login["endpoint"] = "audit"
            actions["login"] = login
            config["actions"] = actions
        }
        let outcome = try login(replay: Self.kiosk)
        #expect(outcome.status == 0, "\(outcome.log)")
        let line = try decisionLine(outcome, priority: 5)
        let request = try #require(collector.requests("/audit").first)
        let record = try #require(try JSONSerialization.jsonObject(with: Data(request.body.utf8)) as? [String: Any])
        #expect(line.contains("record=\(record["id"] as? String ?? "?")"))
        let subject = try #require(record["subject"] as? [String: String])
        #expect(subject["user"] == "alice" && subject["remoteHost"] == "10.1.2.3" && subject["tty"] == "ssh")
        #expect(subject["service"]?.hasPrefix("pam-harness-") == true, "\(subject)")
        #expect((record["policy"] as? [String: Any])?["decision"] as? String == "allow")
        var checker = GeolocateProcess()
        checker.executable = GeolocateProcess.projectRoot.appendingPathComponent("scripts/check-schema")
        let verdict = try checker.run([GeolocateProcess.projectRoot.appendingPathComponent("docs/schema/record.schema.json").path, "-"],
                                      stdin: Data(request.body.utf8))
        #expect(verdict.status == 0, "record.schema.json: \(verdict.stdout)\(verdict.stderr)")
    }

    /// SPEC §15 through PAM: the login action's `jwt` endpoint gets a location token whose
    /// `sub` is the PAM user, signed by the device key, which PyJWT verifies with the JWK Set
    /// `key init` printed.
    @Test func theActionsJWTEndpointGetsATokenNamingThePAMUser() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try writeConfig { config in
            config["endpoints"] = ["risk": ["url": collector.url("/tokens"), "format": "jwt"]]
            // --pam is system mode, whose key is /etc/geolocate/device-key unless the config says.
            config["signing"] = ["audience": "https://risk.example", "keyFile": geolocate.home.appendingPathComponent("device-key").path]
            var actions = config["actions"] as? [String: Any] ?? [:]
            var login = actions["login"] as? [String: Any] ?? [:]
            login["endpoint"] = "risk"
            actions["login"] = login
            config["actions"] = actions
        }
        let made = try geolocate.run(["key", "init", "--config", geolocate.configPath])
        #expect(made.status == 0, "\(made.stderr)")
        let jwks = geolocate.home.appendingPathComponent("device.jwks").path
        try made.stdout.write(toFile: jwks, atomically: true, encoding: .utf8)
        let outcome = try login(replay: Self.kiosk)
        #expect(outcome.status == 0, "\(outcome.log)")
        let line = try decisionLine(outcome, priority: 5)
        let request = try #require(collector.requests("/tokens").first, "\(outcome.log)")
        #expect(request.contentType == "application/jwt")
        let token = request.body.trimmingCharacters(in: .whitespacesAndNewlines)
        let decoded = try Spawn.run(["/usr/bin/python3", GeolocateProcess.projectRoot.appendingPathComponent("Tests/GeolocateIntegrationTests/Support/jws-tool.py").path,
                                     "decode", token, jwks])
        #expect(decoded.status == 0, "PyJWT: \(String(decoding: decoded.stderr, as: UTF8.self))")
        let claims = try #require(try JSONSerialization.jsonObject(with: decoded.stdout) as? [String: Any])
        #expect(claims["sub"] as? String == "alice" && claims["aud"] as? String == "https://risk.example", "\(claims)")
        let loc = try #require(claims["loc"] as? [String: Any])
        #expect(line.contains("record=\(loc["id"] as? String ?? "?")") && claims["jti"] as? String == loc["id"] as? String)
        #expect((loc["policy"] as? [String: Any])?["decision"] as? String == "allow")
    }

    /// pam_exec as the caller's shell would run it under `su`: the caller's environment chooses
    /// no file, source or state directory; nothing is printed.
    @Test func theCallersEnvironmentChoosesNothing() throws {
        try writeConfig()
        let elsewhere = geolocate.home.appendingPathComponent("caller")
        let hostile = ["PAM_TYPE": "account", "PAM_USER": "alice", "GEOLOCATE_STATE_DIR": elsewhere.path + "/state",
                       "GEOLOCATE_CONFIG": elsewhere.path + "/config.json", "HOME": elsewhere.path,
                       "XDG_STATE_HOME": elsewhere.path + "/xdg", "XDG_CONFIG_HOME": elsewhere.path + "/xdg",
                       "GEOLOCATE_SOURCE": "nmea:" + (try outside)]
        let result = try geolocate.run(hookArguments(replay: Self.kiosk), environment: hostile)
        #expect(result.status == 0 && result.stdout.isEmpty && result.stderr.isEmpty, "\(result)")
        #expect(!FileManager.default.fileExists(atPath: elsewhere.path))
        #expect(FileManager.default.fileExists(atPath: geolocate.stateDirectory))
    }

    @Test func onlyAuthAndAccountDecideAndAMissingTypeFailsClosed() throws {
        try writeConfig()
        let missing = try geolocate.run(hookArguments(replay: try outside), environment: ["PAM_TYPE": "", "PAM_USER": "alice"])
        #expect(missing.status == 1 && missing.stdout.isEmpty && missing.stderr.isEmpty, "\(missing)")
        for type in ["session", "open_session", "password"] {
            let other = try geolocate.run(hookArguments(replay: try outside), environment: ["PAM_TYPE": type, "PAM_USER": "alice"])
            #expect(other.status == 0 && other.stdout.isEmpty && other.stderr.isEmpty, "\(type): \(other)")
        }
        #expect(!FileManager.default.fileExists(atPath: geolocate.stateDirectory), "nothing was collected")
    }

    /// SPEC §14: an endpoint that accepts and never answers does not hold the login past the
    /// action's timeout (+ 200 ms); the record waits in the spool. Before, `--post` held it 10 s.
    @Test func aReceiverThatNeverAnswersDoesNotHoldTheLogin() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/slow": ["default": ["delay": 30.0, "status": 200]]])
        try writeConfig()
        let started = ContinuousClock.now
        let result = try geolocate.run(hookArguments(replay: Self.kiosk, ["--timeout", "1s", "--post", collector.url("/slow")]),
                                       environment: ["PAM_TYPE": "account", "PAM_USER": "alice"])
        let took = ContinuousClock.now - started
        #expect(result.status == 0, "\(result)")
        #expect(took < .seconds(6), "the hook took \(took); the receiver answers after 30 s")
        #expect(collector.requests("/slow").count == 1, "the record was sent")
        let pending = try geolocate.run(["status", "--json", "--state-dir", geolocate.stateDirectory, "--config", geolocate.configPath])
        #expect(pending.stdout.contains("\"pending\""), "\(pending.stdout)")
    }

    /// A key given twice (jq keeps the last, Foundation one of them) never chooses onError.
    @Test func aConfigWithADuplicateKeyFailsClosed() throws {
        try writeConfig()
        let text = try String(contentsOfFile: geolocate.configPath, encoding: .utf8)
        let policy = try #require(text.range(of: #""policy":{"#))
        try (text[..<policy.upperBound] + #""onError":"allow","onError":"deny","# + text[policy.upperBound...])
            .write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)
        let outcome = try login(replay: Self.kiosk)
        #expect(outcome.status != 0)
        #expect(try decisionLine(outcome, priority: 3).contains(#"decision=deny reason="cannot decide (policy.onError deny): "#))
    }

    @Test func anUnusableStateDirectoryFailsClosed() throws {
        try writeConfig()
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: geolocate.stateDirectory, contents: Data("not a directory".utf8)))
        let outcome = try login(replay: Self.kiosk)
        #expect(outcome.status != 0)
        #expect(try decisionLine(outcome, priority: 3).contains("the state directory"), "\(outcome.log)")
    }

    /// SPEC §14: while gpsd is down any user may listen on its port; such a listener is not a
    /// source, so the login is denied (no location) and the log says why, however the host is
    /// spelled; and track never remembers what it serves.
    @Test(arguments: ["127.0.0.1", "[::ffff:127.0.0.1]", "0.0.0.0", "localhost"])
    func aGpsdPortHeldByAnotherUserIsNoSource(_ host: String) throws {
        let fake = try ScriptedGPSD(["poll": [ScriptedGPSD.tpv(time: "2026-11-21T14:30:00.000Z", ["lat": 45.7640, "lon": 4.8357, "mode": 3])],
                                     "stream": [ScriptedGPSD.tpv(time: "2026-11-21T14:30:00.000Z", ["lat": 45.7640, "lon": 4.8357, "mode": 3])]],
                                    user: "nobody")
        defer { fake.stop() }
        try writeConfig()
        let source = "gpsd://\(host):\(fake.port)"
        let track = try geolocate.run(["track", "--source", source, "--count", "1", "--every-fix", "--stdout", "--no-spool", "--duration", "2s"])
        #expect(track.stdout.isEmpty && track.stderr.contains("not trusted"), "\(track)")
        #expect(!FileManager.default.fileExists(atPath: geolocate.stateDirectory + "/last-known.json"))
        let arguments = ["trigger", "login", "--pam", "--config", geolocate.configPath, "--state-dir", geolocate.stateDirectory,
                         "--source", source]
        let service = PAMStack.service(binary: GeolocateProcess.binary.path, arguments: arguments)
        let outcome = try PAMStack.run(service: service, user: "alice", operation: "acct_mgmt", items: Self.items, in: geolocate.home)
        #expect(outcome.status != 0)
        #expect(try decisionLine(outcome, priority: 4).contains("decision=deny"))
        let uid = String(getpwnam("nobody").pointee.pw_uid)
        #expect(outcome.geolocateLines.contains { $0.contains("held by uid \(uid)") }, "\(outcome.log)")
        #expect(fake.commands.isEmpty, "geolocate never asked it: \(fake.commands)")
    }
}
