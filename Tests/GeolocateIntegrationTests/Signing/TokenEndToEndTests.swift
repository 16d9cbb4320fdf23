import Foundation
import Testing

/// Location tokens and device keys (SPEC §15), checked by independent JOSE code: PyJWT and
/// cryptography (Debian's python3-jwt and python3-cryptography), through the example verifier a
/// server would run (`Examples/verify/verify.py`) and `Support/jws-tool.py`.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct TokenEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")
    static let python = "/usr/bin/python3"
    static let verifier = GeolocateProcess.projectRoot.appendingPathComponent("Examples/verify/verify.py").path
    static let tool = GeolocateProcess.projectRoot.appendingPathComponent("Tests/GeolocateIntegrationTests/Support/jws-tool.py").path

    /// The risk server's kit against real tokens, case by case (`Support/verify-kit-test.py`):
    /// enrolment, gate tokens without a nonce, issued nonces, replayed sources, audiences,
    /// times, forged keys, concurrent checks and rotations.
    @Test func theRiskServersKitHoldsEveryCase() throws {
        let script = GeolocateProcess.projectRoot.appendingPathComponent("Tests/GeolocateIntegrationTests/Support/verify-kit-test.py").path
        let outcome = try Spawn.run([Self.python, script, GeolocateProcess.binary.path], mergingStderr: true, timeLimit: .seconds(300))
        let output = String(decoding: outcome.stdout, as: UTF8.self)
        #expect(outcome.status == 0 && !output.contains("FAIL"), "\(output)")
    }

    /// A device with permission granted and a key, and the JWK Set `key init` printed.
    func enrolled(_ device: GeolocateProcess? = nil) throws -> (device: GeolocateProcess, jwks: String) {
        let device = device ?? geolocate
        #expect(try device.run(["config", "set", "permissions", "fine"]).status == 0)
        let made = try device.run(["key", "init"])
        #expect(made.status == 0, "\(made.stderr)")
        let jwks = device.home.appendingPathComponent("device.jwks").path
        try made.stdout.write(toFile: jwks, atomically: true, encoding: .utf8)
        return (device, jwks)
    }

    func token(_ device: GeolocateProcess, _ extra: [String] = ["--audience", "https://risk.example"]) throws -> String {
        let result = try device.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--format", "jwt"] + extra)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasSuffix("\n") && result.stdout.split(separator: "\n").count == 1)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The example verifier's answer to `arguments`: its exit status and what it printed.
    func verifier(_ arguments: [String], input: String = "") throws -> (status: Int32, text: String) {
        let outcome = try Spawn.run([TokenEndToEndTests.python, TokenEndToEndTests.verifier] + arguments, input: Data(input.utf8))
        return (outcome.status, String(decoding: outcome.stdout + outcome.stderr, as: UTF8.self))
    }

    /// A risk server: the example verifier's store (in `device`'s home) with `device` enrolled
    /// from what `key show` prints, and the device id it is enrolled under.
    func server(_ device: GeolocateProcess) throws -> (store: String, iss: String) {
        let store = device.home.appendingPathComponent("server.store").path
        let shown = try device.run(["key", "show"])
        #expect(shown.status == 0, "\(shown.stderr)")
        let keys = device.home.appendingPathComponent("key-show.json").path
        try shown.stdout.write(toFile: keys, atomically: true, encoding: .utf8)
        let enrolment = try verifier(["--store", store, "enrol", keys])
        #expect(enrolment.status == 0, "\(enrolment.text)")
        let iss = try #require(try claims(shown.stdout)["iss"] as? String)
        return (store, iss)
    }

    /// A nonce the server issues for a login of its device.
    func nonce(_ server: (store: String, iss: String)) throws -> String {
        let issued = try verifier(["--store", server.store, "nonce", server.iss])
        #expect(issued.status == 0, "\(issued.text)")
        return issued.text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The server's check of `token`. These tokens come from replayed NMEA logs (`src` `replay`),
    /// which the verifier takes only when told to.
    func verify(_ token: String, server: (store: String, iss: String), audience: String = "https://risk.example",
                now: Int64? = nil) throws -> (status: Int32, text: String) {
        try verifier(["--store", server.store, "check", audience, "--accept-replay"] + (now.map { ["--now", String($0)] } ?? []),
                     input: token)
    }

    func tool(_ arguments: [String]) throws -> String {
        let outcome = try Spawn.run([TokenEndToEndTests.python, TokenEndToEndTests.tool] + arguments)
        #expect(outcome.status == 0, "\(String(decoding: outcome.stderr, as: UTF8.self))")
        return String(decoding: outcome.stdout, as: UTF8.self)
    }

    func claims(_ text: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// A base64url nonce starts with `-` one time in 64: it is the nonce, not a flag.
    @Test func aNonceMayStartWithADash() throws {
        let (device, _) = try enrolled()
        let token = try token(device, ["--audience", "https://risk.example", "--nonce", "-Xy_9"])
        let claims = try claims(try tool(["decode", token, device.home.appendingPathComponent("device.jwks").path]))
        #expect(claims["nonce"] as? String == "-Xy_9", "\(claims)")
    }

    @Test func aTokenVerifiesWithTheKeyShowPrintsAndCarriesTheRecord() throws {
        let (device, _) = try enrolled()
        let server = try server(device)
        let nonce = try nonce(server)
        let token = try token(device, ["--audience", "https://risk.example", "--nonce", nonce])
        #expect(try verifier(["--store", server.store, "check", "https://risk.example"], input: token).text.contains("replay"),
                "a token made from a replayed log is refused unless the server accepts them")
        let answer = try verify(token, server: server)
        #expect(answer.status == 0, "\(answer.text)")
        let claims = try claims(answer.text)
        let deviceID = try String(contentsOfFile: device.stateDirectory + "/device-id", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(claims["iss"] as? String == deviceID)
        #expect(claims["aud"] as? String == "https://risk.example")
        #expect(claims["nonce"] as? String == nonce)
        #expect(claims["iss"] as? String == server.iss, "key show names the device that signs")
        let iat = try #require(claims["iat"] as? Int)
        #expect(claims["exp"] as? Int == iat + 120, "signing.tokenLifetime's default is 2m")
        #expect(abs(Double(iat) - Date().timeIntervalSince1970) < 60)
        #expect(claims["src"] as? String == "replay")
        #expect(claims["sub"] == nil, "no PAM user")
        let loc = try #require(claims["loc"] as? [String: Any])
        #expect(loc["id"] as? String == claims["jti"] as? String)
        // The record is the one --format mosaic prints for the same replay.
        let record = try device.run(["trigger", "login", "--replay", drive, "--timeout", "10s"]).json()
        let location = try #require(loc["location"] as? [String: Any])
        let printed = try #require(record["location"] as? [String: Any])
        #expect(location["latitude"] as? String == printed["latitude"] as? String)
        #expect(location["longitude"] as? String == printed["longitude"] as? String)
        #expect(claims["fixTime"] as? Int == location["recordTimestamp"] as? Int)
        #expect(claims["fixQuality"] as? String == "gps" && location["fixQuality"] as? String == "gps")
        // Claims are written once, keys sorted (the payload decoded by hand, not by PyJWT).
        let payload = try #require(token.split(separator: ".").dropFirst().first)
        let payloadBytes = try #require(Data(base64URL: String(payload)))
        let keys = String(decoding: payloadBytes, as: UTF8.self).matches(of: /"([a-zA-Z]+)":/).map { String($0.1) }
        // `gnssAuth`'s own members (sorted too) are not top-level claims.
        let gnssAuth = ["authenticatedSatellites", "fixAuthenticated", "osnma"]
        let beforeLoc = Array(keys.prefix { $0 != "loc" })
        #expect(beforeLoc.filter(gnssAuth.contains) == gnssAuth, "\(beforeLoc)")
        let topLevel = beforeLoc.filter { !gnssAuth.contains($0) } + ["loc"] + Array(keys.drop { $0 != "nonce" })
        #expect(topLevel == topLevel.sorted(), "\(topLevel)")
        #expect(Set(topLevel).count == topLevel.count)
    }

    @Test func keyShowsKidIsTheRFC7638ThumbprintAndPEMIsTheSameKey() throws {
        let (device, jwks) = try enrolled()
        let shown = try device.run(["key", "show"])
        let enrolledKeys = try String(contentsOfFile: jwks, encoding: .utf8)
        #expect(shown.stdout == enrolledKeys)
        let key = try #require((try claims(shown.stdout)["keys"] as? [[String: Any]])?.first)
        #expect(try tool(["thumbprints", jwks]) == "\(key["kid"] as? String ?? "?")\n")
        let pem = try device.run(["key", "show", "--pem"])
        #expect(pem.status == 0)
        let pemFile = device.home.appendingPathComponent("device.pem").path
        try pem.stdout.write(toFile: pemFile, atomically: true, encoding: .utf8)
        #expect(try tool(["pem-keys", pemFile]) == "\(key["x"] as? String ?? "?")\n")
        let mode = try FileManager.default.attributesOfItem(atPath: device.stateDirectory + "/device-key")[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func theVerifierRefusesEveryChangedOrForgedToken() throws {
        let (device, jwks) = try enrolled()
        let server = try server(device)
        let token = try token(device)
        var refusals: [(String, String)] = []
        // A changed character in the middle of each part.
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        for index in 0..<3 {
            var changed = parts
            var characters = Array(changed[index])
            let middle = characters.count / 2
            characters[middle] = characters[middle] == "A" ? "B" : "A"
            changed[index] = String(characters)
            refusals.append(("a changed byte in part \(index + 1)", changed.joined(separator: ".")))
        }
        for kind in ["none", "hs256-pem", "hs256-x", "embedded-jwk"] {
            refusals.append((kind, try tool(["forge", kind, token, jwks]).trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        let other = GeolocateProcess()
        _ = try enrolled(other)
        refusals.append(("another device's key", try self.token(other)))
        for (what, forged) in refusals {
            let answer = try verify(forged, server: server)
            #expect(answer.status != 0 && answer.text.contains("refused"), "\(what) was accepted: \(answer.text)")
        }
        // The genuine token passes the same verifier (so the refusals are for what they changed).
        #expect(try verify(token, server: server).status == 0)
        #expect(try verify(token, server: server).text.contains("refused"), "each token once")
    }

    @Test func theVerifierRefusesAnotherAudienceNonceOrTime() throws {
        let (device, jwks) = try enrolled()
        let server = try server(device)
        let token = try token(device, ["--audience", "https://risk.example", "--nonce", try nonce(server)])
        let iat = try #require(try claims(try tool(["decode", token, jwks]))["iat"] as? Int)
        #expect(try verify(token, server: server, audience: "https://other.example").text.contains("refused"))
        let unissued = try self.token(device, ["--audience", "https://risk.example", "--nonce", "n-124"])
        #expect(try verify(unissued, server: server).text.contains("nonce"), "a nonce the server never issued")
        #expect(try verify(token, server: server, now: Int64(iat) + 120).text.contains("expired"))
        #expect(try verify(token, server: server, now: Int64(iat) + 59).status == 0, "within the verifier's 60 s of skew")
        // signing.tokenLifetime sets exp.
        #expect(try device.run(["config", "set", "signing.tokenLifetime", "30s"]).status == 0)
        let short = try self.token(device)
        let shortClaims = try claims(try tool(["decode", short, jwks]))
        #expect((shortClaims["exp"] as? Int).map { $0 - (shortClaims["iat"] as? Int ?? 0) } == 30)
        #expect(try device.run(["config", "set", "signing.tokenLifetime", "2h"]).status == 64)
    }

    @Test func rotationKeepsTheOldKeyListedAndSignsTheNewOne() throws {
        let (device, oldJWKS) = try enrolled()
        let server = try server(device)
        let oldKid = try #require((try claims(try String(contentsOfFile: oldJWKS, encoding: .utf8))["keys"] as? [[String: Any]])?.first?["kid"] as? String)
        let rotated = try device.run(["key", "rotate"])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        #expect(rotated.stderr.contains(oldKid) && rotated.stderr.contains("key show --all lists it"))
        let statement = try claims(try tool(["decode", rotated.stdout.trimmingCharacters(in: .whitespacesAndNewlines), oldJWKS]))
        let signing = try #require(try claims(try device.run(["key", "show"]).stdout)["keys"] as? [[String: Any]])
        #expect(signing.count == 1 && signing.first?["kid"] as? String != oldKid, "key show enrols the signing key alone: \(signing)")
        let shown = try device.run(["key", "show", "--all"])
        let keys = try #require(try claims(shown.stdout)["keys"] as? [[String: Any]])
        #expect(keys.count == 2)
        #expect(keys.last?["kid"] as? String == oldKid, "the old key stays listed with --all")
        #expect(statement["sub"] as? String == keys.first?["kid"] as? String, "the old key names the new one")
        #expect((statement["jwk"] as? [String: Any])?["x"] as? String == keys.first?["x"] as? String)
        let token = try token(device)
        #expect(try verify(token, server: server).status != 0, "the old key signs no more: the server has not followed the rotation")
        let followed = try verifier(["--store", server.store, "rotate"], input: rotated.stdout)
        #expect(followed.status == 0, "\(followed.text)")
        #expect(try verify(token, server: server).status == 0, "the server follows the old key's statement to the new key")
    }

    @Test func aKeyIsNeverReplacedUnlessAskedAndABadOneStopsTheTrigger() throws {
        let (device, jwks) = try enrolled()
        let keyFile = device.stateDirectory + "/device-key"
        let before = try Data(contentsOf: URL(fileURLWithPath: keyFile))
        let again = try device.run(["key", "init"])
        #expect(again.status == 78 && again.stderr.contains("already exists") && again.stdout.isEmpty)
        #expect(try Data(contentsOf: URL(fileURLWithPath: keyFile)) == before)
        let forced = try device.run(["key", "init", "--force-new"])
        let enrolledKeys = try String(contentsOfFile: jwks, encoding: .utf8)
        #expect(forced.status == 0 && forced.stdout != enrolledKeys)

        chmod(keyFile, 0o640)
        let loose = try device.run(["trigger", "login", "--replay", drive, "--format", "jwt", "--audience", "a"])
        #expect(loose.status == 78 && loose.stderr.contains(keyFile) && loose.stderr.contains("640") && loose.stdout.isEmpty)
        unlink(keyFile)
        let missing = try device.run(["trigger", "login", "--replay", drive, "--format", "jwt", "--audience", "a"])
        #expect(missing.status == 78 && missing.stderr.contains(keyFile) && missing.stderr.contains("geolocate key init"))
        #expect(missing.stdout.isEmpty)
        try "not a key".write(toFile: keyFile, atomically: true, encoding: .utf8)
        chmod(keyFile, 0o600)
        #expect(try device.run(["key", "show"]).status == 78)
    }

    /// A `jwt` endpoint receives one token per spooled record, signed when sent: each verifies
    /// with the enrolled key, names the endpoint as audience and carries its record.
    @Test func aJWTEndpointReceivesATokenPerRecordSignedWhenSent() throws {
        let (device, jwks) = try enrolled()
        let server = try server(device)
        #expect(try device.run(["track", "--replay", drive, "--every-fix"]).status == 0)
        let exported = try device.run(["export", "--format", "csv"])
        let spooled = exported.stdout.split(whereSeparator: \.isNewline).dropFirst()
        #expect(spooled.count > 10, "the drive spools a record per fix (the CSV's rows after its header): \(exported.stderr)")
        let collector = try Collector()
        defer { collector.stop() }
        let url = collector.url("/tokens")
        #expect(try device.run(["config", "set", "endpoints.risk.url", url]).status == 0)
        #expect(try device.run(["config", "set", "endpoints.risk.format", "jwt"]).status == 0)
        let before = Int(Date().timeIntervalSince1970)
        let flushed = try device.run(["flush"])
        #expect(flushed.status == 0, "\(flushed.stderr)")
        let requests = collector.requests("/tokens")
        #expect(requests.allSatisfy { $0.contentType == "application/jwt" })
        let tokens = requests.flatMap { $0.body.split(separator: "\n").map(String.init) }
        #expect(tokens.count == spooled.count, "one token per record")
        var ids: Set<String> = []
        for token in tokens.prefix(5) + tokens.suffix(2) {
            let answer = try verify(token, server: server, audience: url)
            let claims = try claims(try tool(["decode", token, jwks]))
            #expect((claims["iat"] as? Int).map { $0 >= before - 1 } == true, "signed when sent, not when spooled")
            #expect(claims["aud"] as? String == url)
            #expect(claims["nonce"] == nil)
            #expect(answer.status == 0, "a token sent unprompted (no nonce) is taken once: \(answer.text)")
            ids.insert((claims["loc"] as? [String: Any])?["id"] as? String ?? "")
        }
        #expect(ids.count == 7)
        // Without the key, a flush to a jwt endpoint is a configuration error; nothing is sent.
        unlink(device.stateDirectory + "/device-key")
        #expect(try device.run(["track", "--replay", drive, "--every-fix"]).status == 0)
        let keyless = try device.run(["flush"])
        #expect(keyless.status == 78 && keyless.stderr.contains("geolocate key init"), "\(keyless.stderr)")
        #expect(collector.requests("/tokens").count == requests.count)
    }

    /// Found by the hostile pass: a replacement never writes through what is not this user's
    /// key file, and rotations at once each keep the key they signed for.
    @Test func keyChangesTakeTurnsAndReplaceOnlyAKeyFile() throws {
        let (device, _) = try enrolled()
        let fifo = device.home.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(try device.run(["config", "set", "signing.keyFile", fifo]).status == 0)
        let forced = try device.run(["key", "init", "--force-new"], timeLimit: .seconds(60))
        #expect(forced.status == 78 && forced.stderr.contains("not a regular file"), "\(forced.stderr)")
        var status = stat()
        #expect(lstat(fifo, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO, "the FIFO is still there")
        #expect(try device.run(["config", "unset", "signing.keyFile"]).status == 0)

        let rotations = try (0..<5).map { _ in try device.start(["key", "rotate"]) }
        let results = rotations.compactMap { $0.finish(within: .seconds(60)) }
        #expect(results.count == 5 && results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
        let keys = try #require(try claims(try device.run(["key", "show", "--all"]).stdout)["keys"] as? [[String: Any]])
        #expect(keys.count == 6, "each rotation retired the key before it: \(keys.count) keys")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: device.stateDirectory).filter { $0.contains("device-key.") && !$0.hasSuffix(".lock") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test func usageErrorsOfJWT() throws {
        _ = try enrolled()
        let noAudience = try geolocate.run(["trigger", "login", "--replay", drive, "--format", "jwt"])
        #expect(noAudience.status == 64 && noAudience.stderr.contains("--audience"))
        let withNow = try geolocate.run(["trigger", "login", "--replay", drive, "--format", "jwt", "--audience", "a", "--now", "0"])
        #expect(withNow.status == 64 && withNow.stderr.contains("--now"))
        let stray = try geolocate.run(["trigger", "login", "--replay", drive, "--nonce", "x"])
        #expect(stray.status == 64)
        // signing.audience holds what --audience may: C1 controls, bidi overrides and U+FFFD
        // (text that was not UTF-8) are refused there too.
        for bad in ["a\u{85}b", "a\u{202E}b", "a\u{FFFD}b"] {
            let refused = try geolocate.run(["config", "set", "signing.audience", bad])
            #expect(refused.status == 64 && refused.stderr.contains("without control characters"), "\(bad.unicodeScalars.map(\.value)): \(refused.stderr)")
        }
        #expect(try geolocate.run(["config", "set", "signing.audience", "https://risk.example"]).status == 0)
        #expect(try geolocate.run(["trigger", "login", "--replay", drive, "--format", "jwt", "--timeout", "10s"]).status == 0)
        // A nonce that is not UTF-8 would be repaired into another one: it is refused, as is
        // every argument that is not UTF-8 text.
        var shell = geolocate
        shell.executable = URL(fileURLWithPath: "/bin/sh")
        let invalid = try shell.run(["-c", #"exec "$0" trigger login --replay "$1" --format jwt --audience a --nonce "$(printf 'ab\377cd')""#,
                                     GeolocateProcess.binary.path, drive])
        #expect(invalid.status == 64 && invalid.stdout.isEmpty, "\(invalid.stderr)")
        #expect(invalid.stderr == "geolocate: argument 10 is not valid UTF-8 text; nothing was done\n", "\(invalid.stderr)")
    }
}

extension Data {
    /// Base64url without padding, as JWS parts are written.
    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        self.init(base64Encoded: base64)
    }
}
