import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Device keys inside a TPM (SPEC §15, "A key no one can copy") through the binary, against a
/// real TPM 2.0 implementation (swtpm, started on free loopback ports per test): ES256 tokens
/// that PyJWT verifies, rotation across providers, and every way a TPM fails said in one line.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct TPMKeyEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")
    static let tool = GeolocateProcess.projectRoot.appendingPathComponent("Tests/GeolocateIntegrationTests/Support/jws-tool.py").path

    /// `geolocate` with permission granted and keys made where `provider` says, in `tpm`.
    func configure(provider: String, tcti: String) throws {
        for (key, value) in [("permissions", "fine"), ("signing.keyProvider", provider), ("signing.tpm", tcti)] {
            let set = try geolocate.run(["config", "set", key, value])
            #expect(set.status == 0, "\(set.stderr)")
        }
    }

    /// Writes `text` (a JWK Set, as `key init` and `key show` print) to a file of the test's.
    func saved(_ text: String, as name: String) throws -> String {
        let path = geolocate.home.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func token() throws -> GeolocateProcess.Result {
        try geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--format", "jwt", "--audience", "https://risk.example"])
    }

    /// PyJWT's claims of `token` verified with the first key of the JWK Set at `jwks` (ES256 for
    /// an EC key, EdDSA for an OKP one: the key's algorithm, never the token's), or its error.
    func decoded(_ token: String, _ jwks: String) throws -> (status: Int32, claims: [String: Any]) {
        let outcome = try Spawn.run(["/usr/bin/python3", Self.tool, "decode", token, jwks])
        let claims = outcome.status == 0 ? try JSONSerialization.jsonObject(with: outcome.stdout) as? [String: Any] : nil
        return (outcome.status, claims ?? [:])
    }

    func header(_ token: String) throws -> [String: Any] {
        let part = String(token.split(separator: ".")[0])
        let data = try #require(Data(base64URL: part))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// `key init` makes the key inside the TPM: the file holds no private key, the JWK Set is
    /// an EC P-256 key whose kid PyJWT's side computes the same, and a token is ES256, signed
    /// r‖s, verified by PyJWT with that key and refused with a changed byte.
    @Test func aTokenSignedInTheTPMVerifiesWithPyJWT() throws {
        let tpm = try SoftwareTPM()
        try configure(provider: "tpm", tcti: tpm.tcti)
        let made = try geolocate.run(["key", "init"])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stderr.contains("in the TPM at \(tpm.tcti), 0x81000010"), "\(made.stderr)")
        let jwks = try saved(made.stdout, as: "device.jwks")
        let keys = try #require((try JSONSerialization.jsonObject(with: Data(made.stdout.utf8)) as? [String: Any])?["keys"] as? [[String: Any]])
        #expect(keys.count == 1 && keys[0]["kty"] as? String == "EC" && keys[0]["crv"] as? String == "P-256", "\(keys)")
        let thumbprint = try Spawn.run(["/usr/bin/python3", Self.tool, "thumbprints", jwks])
        #expect(String(decoding: thumbprint.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == keys[0]["kid"] as? String)
        let file = try String(contentsOfFile: geolocate.stateDirectory + "/device-key", encoding: .utf8)
        #expect(file.hasPrefix("-----BEGIN GEOLOCATE TPM KEY-----") && !file.contains("PRIVATE KEY"), "\(file)")

        let signed = try token()
        #expect(signed.status == 0, "\(signed.stderr)")
        let token = signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try header(token) as NSDictionary == ["alg": "ES256", "kid": keys[0]["kid"] as? String ?? "?", "typ": "JWT"] as NSDictionary)
        #expect(Data(base64URL: String(token.split(separator: ".")[2]))?.count == 64, "r‖s, 32 bytes each")
        let verified = try decoded(token, jwks)
        #expect(verified.status == 0 && verified.claims["aud"] as? String == "https://risk.example", "\(verified)")
        // ECDSA signatures differ each time; each verifies.
        let again = try self.token().stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let againVerified = try decoded(again, jwks)
        #expect(again != token && againVerified.status == 0)
        var changed = Array(token.utf8)
        changed[changed.count - 5] = changed[changed.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(try decoded(String(decoding: changed, as: UTF8.self), jwks).status != 0, "a changed signature is refused")
        // A second init keeps the key and the TPM as they are.
        let second = try geolocate.run(["key", "init"])
        #expect(second.status == 78 && second.stderr.contains("already exists"), "\(second)")
        #expect(try decoded(try self.token().stdout.trimmingCharacters(in: .whitespacesAndNewlines), jwks).status == 0)
        // The key file lost: the key in the TPM is replaced only when asked to.
        try FileManager.default.removeItem(atPath: geolocate.stateDirectory + "/device-key")
        let lost = try geolocate.run(["key", "init"])
        #expect(lost.status == 78 && lost.stderr.contains("already holds a key at 0x81000010 that no key file names")
            && lost.stderr.contains("--force-new replaces it"), "\(lost)")
        #expect(try geolocate.run(["key", "init", "--force-new"]).status == 0)
    }

    /// An Ed25519 file key rotates to a TPM key (the file key signs the statement), the TPM key
    /// to another TPM key (the old TPM key signs; the handles alternate), and that to a file
    /// key again: each statement verifies with the key before it and names the key after it.
    @Test func rotationCrossesProviders() throws {
        let tpm = try SoftwareTPM()
        try configure(provider: "file", tcti: tpm.tcti)
        let made = try geolocate.run(["key", "init"])
        #expect(made.status == 0, "\(made.stderr)")
        var before = try saved(made.stdout, as: "key-0.jwks")
        for (step, provider, algorithm, place) in [(1, "tpm", "ES256", "0x81000010"), (2, "tpm", "ES256", "0x81000012"),
                                                   (3, "file", "EdDSA", ""), (4, "tpm", "ES256", "0x81000010")] {
            #expect(try geolocate.run(["config", "set", "signing.keyProvider", provider]).status == 0)
            let rotated = try geolocate.run(["key", "rotate"])
            #expect(rotated.status == 0, "step \(step): \(rotated.stderr)")
            #expect(place.isEmpty || rotated.stderr.contains(place), "step \(step): \(rotated.stderr)")
            let statement = rotated.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let checked = try decoded(statement, before)
            #expect(checked.status == 0, "step \(step): the statement verifies with the key before")
            let jwk = try #require(checked.claims["jwk"] as? [String: Any], "step \(step)")
            let shown = try geolocate.run(["key", "show"])
            let after = try saved(shown.stdout, as: "key-\(step).jwks")
            let keys = try #require((try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])?["keys"] as? [[String: Any]])
            #expect(jwk as NSDictionary == keys[0] as NSDictionary && checked.claims["sub"] as? String == keys[0]["kid"] as? String, "step \(step)")
            let signed = try token()
            #expect(signed.status == 0, "step \(step): \(signed.stderr)")
            let token = signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(try header(token)["alg"] as? String == algorithm, "step \(step)")
            #expect(try decoded(token, after).status == 0, "step \(step): the new key signs")
            #expect(try decoded(token, before).status != 0, "step \(step): the old key does not verify the new key's token")
            before = after
        }
        let all = try geolocate.run(["key", "show", "--all"])
        let listed = try #require((try JSONSerialization.jsonObject(with: Data(all.stdout.utf8)) as? [String: Any])?["keys"] as? [[String: Any]])
        #expect(listed.map { $0["kty"] as? String ?? "?" } == ["EC", "OKP", "EC", "EC", "OKP"], "\(listed)")
    }

    /// A TPM that is not there, that holds no key at the handle (a TPM2_Clear), that refuses the
    /// authorisation, or that accepts and never answers: exit 78, one line, no token on stdout,
    /// and never a hang.
    @Test func everyWayATPMFailsIsOneLine() throws {
        var tpm: SoftwareTPM? = try SoftwareTPM()
        let tcti = try #require(tpm?.tcti)
        try configure(provider: "tpm", tcti: tcti)
        #expect(try geolocate.run(["key", "init"]).status == 0)
        let keyFile = geolocate.stateDirectory + "/device-key"
        let good = try String(contentsOfFile: keyFile, encoding: .utf8)
        func fails(_ what: String, saying words: [String], within seconds: Double = 4) throws {
            let started = ContinuousClock.now
            let outcome = try token()
            let took = ContinuousClock.now - started
            #expect(outcome.status == 78 && outcome.stdout.isEmpty, "\(what): \(outcome)")
            let lines = outcome.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(what): one line: \(outcome.stderr)")
            for word in words { #expect(outcome.stderr.contains(word), "\(what): \(outcome.stderr)") }
            #expect(took < .seconds(seconds), "\(what): took \(took)")
        }
        // The authorisation changed by hand: the TPM refuses it (noDA, so no lockout follows).
        var lines = good.split(separator: "\n").map(String.init)
        var block = try #require(Data(base64Encoded: lines[1]))
        block[10] ^= 0x55
        lines[1] = block.base64EncodedString()
        try (lines.joined(separator: "\n") + "\n").write(toFile: keyFile, atomically: true, encoding: .utf8)
        chmod(keyFile, 0o600)
        try fails("wrong authorisation", saying: ["0x81000010", "refused the key's authorisation"])
        try good.write(toFile: keyFile, atomically: true, encoding: .utf8)
        chmod(keyFile, 0o600)
        #expect(try token().status == 0, "the right authorisation signs again")

        // The TPM gone, then back with empty state (what TPM2_Clear leaves).
        tpm = nil
        try fails("no TPM", saying: ["cannot", tcti])
        let cleared = try SoftwareTPM()
        #expect(try geolocate.run(["config", "set", "signing.tpm", cleared.tcti]).status == 0)
        try fails("a cleared TPM", saying: ["holds no key at 0x81000010", "key init --force-new"])
        let attest = try geolocate.run(["key", "attest", "--nonce", "n"])
        #expect(attest.status == 78 && attest.stdout.isEmpty && attest.stderr.split(separator: "\n").count == 1
                && attest.stderr.contains("key init --force-new, and enrol it again"), "attest on a cleared TPM: \(attest)")

        // A TPM that accepts and never answers: the 5 s a signature may take, then one line.
        let port = try TPMLoopback.freePortPair()
        let server = try TPMLoopback.listener(port: port), control = try TPMLoopback.listener(port: port + 1)
        defer { close(server); close(control) }
        #expect(try geolocate.run(["config", "set", "signing.tpm", "swtpm:host=127.0.0.1,port=\(port)"]).status == 0)
        try fails("a TPM that never answers", saying: ["did not answer in time to sign"], within: 8)
    }

    /// The shipped verifier (Examples/verify/verify.py) with a store of the test's: its
    /// stdout trimmed, and its status.
    func verifier(_ arguments: [String], input: String? = nil, trusting authorities: [URL] = []) throws -> (status: Int32, output: String, error: String) {
        let script = GeolocateProcess.projectRoot.appendingPathComponent("Examples/verify/verify.py").path
        let store = geolocate.home.appendingPathComponent("server.store").path
        let outcome = try Spawn.run(["/usr/bin/python3", script, "--store", store] + authorities.flatMap { ["--ca", $0.path] } + arguments,
                                    input: input.map { Data($0.utf8) })
        return (outcome.status, String(decoding: outcome.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines),
                String(decoding: outcome.stderr, as: UTF8.self))
    }

    /// `key attest` end to end, as a risk server uses it: the server enrols the device's key and,
    /// from a first attestation, its attestation key (a credential challenge that `key attest
    /// --activate` answers, as only this TPM can); then each `key attest --nonce` for a nonce
    /// the server issued verifies to the signing key's kid, after a rotation too (the
    /// attestation key stays, so it is enrolled once). The TPM is swtpm manufactured with an EK
    /// certificate from a private CA, the one CA the verifier is given.
    @Test func keyAttestVerifiesWithTheShippedVerifier() throws {
        let tpm = try SoftwareTPM(certified: true)
        try configure(provider: "tpm", tcti: tpm.tcti)
        let made = try geolocate.run(["key", "init"])
        #expect(made.status == 0, "\(made.stderr)")
        let iss = try #require((try JSONSerialization.jsonObject(with: Data(made.stdout.utf8)) as? [String: Any])?["iss"] as? String)
        let enrolled = try verifier(["enrol", try saved(made.stdout, as: "device.jwks")])
        #expect(enrolled.status == 0, "\(enrolled)")
        let authorities = [tpm.rootCertificate, tpm.intermediateCertificate]

        // Enrolment of the attestation key: evidence, the server's challenge, the TPM's answer.
        let first = try geolocate.run(["key", "attest", "--nonce", "enrolment"])
        #expect(first.status == 0 && first.stderr.isEmpty, "\(first)")
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: String])
        #expect(fields.keys.sorted() == ["akPub", "certInfo", "ekCert", "ekPub", "pubArea", "sig"], "\(fields)")
        let challenge = try verifier(["attest-challenge", iss], input: first.stdout, trusting: authorities)
        #expect(challenge.status == 0 && challenge.output.contains("."), "\(challenge)")
        let answered = try geolocate.run(["key", "attest", "--activate=\(challenge.output)"])
        #expect(answered.status == 0, "\(answered)")
        let enrolledAK = try verifier(["attest-enrol", iss], input: answered.stdout)
        #expect(enrolledAK.status == 0 && enrolledAK.output.hasPrefix("enrolled attestation key"), "\(enrolledAK)")

        /// `key attest` for a nonce the server issues, checked: what the verifier says.
        func attested() throws -> (status: Int32, output: String, error: String) {
            let nonce = try verifier(["nonce", iss]).output
            let evidence = try geolocate.run(["key", "attest", "--nonce=\(nonce)"])
            #expect(evidence.status == 0, "\(evidence)")
            return try verifier(["attest-check", iss, nonce], input: evidence.stdout)
        }
        let kid = try #require((try JSONSerialization.jsonObject(with: Data(made.stdout.utf8)) as? [String: Any])
            .flatMap { ($0["keys"] as? [[String: Any]])?.first?["kid"] as? String })
        let checked = try attested()
        #expect(checked.status == 0 && checked.output == "attested \(kid)", "\(checked)")

        // A rotation within the TPM: the server takes the statement; the same attestation key
        // now certifies the new key.
        let rotated = try geolocate.run(["key", "rotate"])
        #expect(rotated.status == 0, "\(rotated)")
        #expect(try verifier(["rotate"], input: rotated.stdout).status == 0)
        let newKid = try #require((try JSONSerialization.jsonObject(with: Data(try geolocate.run(["key", "show"]).stdout.utf8)) as? [String: Any])
            .flatMap { ($0["keys"] as? [[String: Any]])?.first?["kid"] as? String })
        let afterRotation = try attested()
        #expect(newKid != kid && afterRotation.status == 0 && afterRotation.output == "attested \(newKid)", "\(afterRotation)")

        // Evidence for a nonce the server never issued is refused.
        let unissued = try geolocate.run(["key", "attest", "--nonce", "my own nonce"])
        let refused = try verifier(["attest-check", iss, "my own nonce"], input: unissued.stdout)
        #expect(refused.status == 1 && refused.error.contains("nonce"), "\(refused)")

        // Another TPM's challenge cannot be answered here: one line, exit 78.
        let other = try SoftwareTPM(certified: true)
        let stranger = GeolocateProcess()
        for (key, value) in [("signing.keyProvider", "tpm"), ("signing.tpm", other.tcti)] {
            #expect(try stranger.run(["config", "set", key, value]).status == 0)
        }
        #expect(try stranger.run(["key", "init"]).status == 0)
        let foreign = try stranger.run(["key", "attest", "--nonce", "x"])
        let foreignChallenge = try verifier(["attest-challenge", iss, "--replace"], input: foreign.stdout,
                                            trusting: [other.rootCertificate, other.intermediateCertificate])
        #expect(foreignChallenge.status == 0, "\(foreignChallenge)")
        let wrongTPM = try geolocate.run(["key", "attest", "--activate=\(foreignChallenge.output)"])
        #expect(wrongTPM.status == 78 && wrongTPM.stdout.isEmpty && wrongTPM.stderr.split(separator: "\n").count == 1, "\(wrongTPM)")
    }

    /// `key attest` used wrongly: neither or both of --nonce and --activate, a nonce too long or
    /// with control characters, a challenge that is not two base64url parts (64); a key in a
    /// file, or a TPM without an EK certificate (78). One line each, nothing on stdout.
    @Test func keyAttestRefusesInOneLine() throws {
        let tpm = try SoftwareTPM()
        try configure(provider: "file", tcti: tpm.tcti)
        #expect(try geolocate.run(["key", "init"]).status == 0)
        for (arguments, status, words) in [
            ([], 64, "one of --nonce and --activate"),
            (["--nonce", "a", "--activate=a.b"], 64, "one of --nonce and --activate"),
            (["--nonce", String(repeating: "n", count: 65)], 64, "1 to 64 bytes"),
            (["--nonce", "a\u{1B}[2J"], 64, "control characters"),
            (["--activate=abc"], 64, "two base64url parts"),
            (["--activate=ab=.cd"], 64, "two base64url parts"),
            (["--activate=a.b.c"], 64, "two base64url parts"),
            (["--nonce", "n"], 78, "is in a file, and only a key in a TPM can be attested"),
        ] as [([String], Int32, String)] {
            let outcome = try geolocate.run(["key", "attest"] + arguments)
            #expect(outcome.status == status && outcome.stdout.isEmpty && outcome.stderr.contains(words), "\(arguments): \(outcome)")
            #expect(outcome.status == 64 || outcome.stderr.split(separator: "\n").count == 1, "\(arguments): \(outcome.stderr)")
        }
        #expect(try geolocate.run(["config", "set", "signing.keyProvider", "tpm"]).status == 0)
        #expect(try geolocate.run(["key", "rotate"]).status == 0)
        let uncertified = try geolocate.run(["key", "attest", "--nonce", "n"])
        #expect(uncertified.status == 78 && uncertified.stdout.isEmpty && uncertified.stderr.contains("no endorsement key certificate")
            && uncertified.stderr.split(separator: "\n").count == 1, "\(uncertified)")
    }

    /// `key init --force-new` where no key may be written (a link, a directory, another user's
    /// file at the key's path) is refused before the TPM is touched: the key the real file
    /// names still signs afterwards. And a forced new key over one the file names is made at
    /// the other handle, the old one removed only once the new one is kept.
    @Test func aRefusedForceNewLeavesTheTPMKeyAsItIs() throws {
        let tpm = try SoftwareTPM()
        try configure(provider: "tpm", tcti: tpm.tcti)
        #expect(try geolocate.run(["key", "init"]).status == 0)
        let keyFile = geolocate.stateDirectory + "/device-key", aside = geolocate.home.appendingPathComponent("real-key").path
        try FileManager.default.moveItem(atPath: keyFile, toPath: aside)
        for planted in ["link", "directory"] {
            if planted == "link" { try FileManager.default.createSymbolicLink(atPath: keyFile, withDestinationPath: aside) }
            else { try FileManager.default.createDirectory(atPath: keyFile, withIntermediateDirectories: false) }
            let refused = try geolocate.run(["key", "init", "--force-new"])
            #expect(refused.status == 78 && refused.stderr.contains("nothing was written"), "\(planted): \(refused)")
            // Read, it is refused as every planted state file is (73), in one line.
            let shown = try geolocate.run(["key", "show"])
            #expect(shown.status == 73 && shown.stdout.isEmpty && shown.stderr.hasPrefix("geolocate: refusing ")
                    && shown.stderr.split(separator: "\n").count == 1, "\(planted): \(shown)")
            let initialised = try geolocate.run(["key", "init"])
            #expect(initialised.status == 78 && initialised.stderr.contains("is a \(planted == "link" ? "symbolic link" : "directory"), not a key"),
                    "\(planted): \(initialised)")
            try FileManager.default.removeItem(atPath: keyFile)
        }
        try FileManager.default.moveItem(atPath: aside, toPath: keyFile)
        #expect(try token().status == 0, "the TPM still holds the key the file names")
        let forced = try geolocate.run(["key", "init", "--force-new"])
        #expect(forced.status == 0 && forced.stderr.contains("0x81000012"), "\(forced)")
        #expect(try token().status == 0)
    }

    /// A key file whose public key is not the key the TPM holds at its handle (edited, or the
    /// handle given another key): nothing is signed under the file's kid, one line, exit 78.
    @Test func aKeyFileNamingAnotherPublicKeySignsNothing() throws {
        let tpm = try SoftwareTPM()
        try configure(provider: "tpm", tcti: tpm.tcti)
        #expect(try geolocate.run(["key", "init"]).status == 0)
        let keyFile = geolocate.stateDirectory + "/device-key"
        let good = try String(contentsOfFile: keyFile, encoding: .utf8)
        // Another device's key, its block, at the same handle with the same authorisation.
        let other = GeolocateProcess()
        for (key, value) in [("signing.keyProvider", "tpm"), ("signing.tpm", tpm.tcti)] {
            #expect(try other.run(["config", "set", key, value]).status == 0)
        }
        #expect(try other.run(["key", "init", "--force-new"]).status == 0)  // at 0x81000010 again: it replaces this device's key
        let otherBlock = try String(contentsOfFile: other.stateDirectory + "/device-key", encoding: .utf8)
        // The other device's file now names the key the TPM holds; this device's file names one
        // the TPM no longer has at that handle, with another public key.
        let authorization = Array(try #require(Data(base64Encoded: String(otherBlock.split(separator: "\n")[1]))))
        var mine = Array(try #require(Data(base64Encoded: String(good.split(separator: "\n")[1]))))
        // This file's public key, with the other file's handle and authorisation: the TPM signs,
        // but not as this file's key.
        mine.replaceSubrange(0..<(5 + Int(mine[4])), with: authorization.prefix(5 + Int(authorization[4])))
        var lines = good.split(separator: "\n").map(String.init)
        lines[1] = Data(mine).base64EncodedString()
        try (lines.joined(separator: "\n") + "\n").write(toFile: keyFile, atomically: true, encoding: .utf8)
        chmod(keyFile, 0o600)
        for command in [["trigger", "login", "--replay", drive, "--timeout", "10s", "--format", "jwt", "--audience", "https://risk.example"],
                        ["key", "rotate"]] {
            let refused = try geolocate.run(command)
            #expect(refused.status == 78 && refused.stdout.isEmpty && refused.stderr.contains("holds another key at 0x81000010")
                && refused.stderr.split(separator: "\n").count == 1, "\(command[0]): \(refused)")
        }
        #expect(try other.run(["trigger", "login", "--replay", drive, "--timeout", "10s", "--format", "jwt", "--audience", "x",
                               "--permission", "fine"]).status == 0, "the rotation refused left the TPM's key in place")
    }

    /// A TPM that is gone stops a flush's jwt endpoint alone: the other endpoint is flushed,
    /// the jwt one keeps its records and shows the TPM's problem as its last error.
    @Test func aTPMGoneStopsOnlyTheJWTEndpoints() throws {
        var tpm: SoftwareTPM? = try SoftwareTPM()
        try configure(provider: "tpm", tcti: try #require(tpm?.tcti))
        #expect(try geolocate.run(["key", "init"]).status == 0)
        let collector = try Collector()
        defer { collector.stop() }
        for (key, value) in [("endpoints.risk.url", collector.url("/tokens")), ("endpoints.risk.format", "jwt"),
                             ("signing.audience", "https://risk.example"),
                             ("endpoints.plain.url", collector.url("/plain")), ("endpoints.plain.format", "mosaic-ndjson")] {
            #expect(try geolocate.run(["config", "set", key, value]).status == 0)
        }
        #expect(try geolocate.run(["track", "--replay", drive, "--every-fix", "--permission", "fine"]).status == 0)
        tpm = nil
        let flushed = try geolocate.run(["flush", "--json"])
        #expect(flushed.status == 78 && flushed.stderr.contains("risk"), "\(flushed)")
        #expect(!collector.acceptedIDs("/plain").isEmpty && collector.requests("/tokens").isEmpty)
        let report = try JSONSerialization.jsonObject(with: Data(flushed.stdout.utf8)) as? [String: Any]
        let endpoints = report?["endpoints"] as? [[String: Any]] ?? []
        let risk = endpoints.first { $0["name"] as? String == "risk" }, plain = endpoints.first { $0["name"] as? String == "plain" }
        #expect((risk?["pending"] as? Int ?? 0) > 0 && (risk?["lastError"] as? String)?.contains("TPM") == true, "\(risk ?? [:])")
        #expect(plain?["pending"] as? Int == 0, "\(plain ?? [:])")
    }

    /// A TCTI must be one Debian ships: a library path would be loaded by the TCTI loader.
    @Test func aTCTIIsNeverALibraryPath() throws {
        for value in ["/tmp/evil.so", "libtss2-tcti-evil.so", "evil:conf", ""] {
            let set = try geolocate.run(["config", "set", "signing.tpm", value])
            #expect(set.status == 64 && set.stderr.contains("must be a TCTI"), "\(value): \(set)")
        }
    }
}

/// Root's login gate (SPEC §14) with the device key in a TPM, in a real PAM stack: its token
/// is ES256 and verifies; a TPM that never answers costs the login no more than its time
/// bound, and the decision stands.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .enabled(if: PAMStack.isAvailable, "needs root"))
struct TPMGateEndToEndTests {
    let gate = PAMEndToEndTests()
    var geolocate: GeolocateProcess { gate.geolocate }

    @Test func theGateSignsInTheTPMAndATPMThatNeverAnswersCostsOnlyItsTimeBound() throws {
        let tpm = try SoftwareTPM()
        let collector = try Collector()
        defer { collector.stop() }
        func configure(tcti: String) throws {
            try gate.writeConfig { config in
                config["endpoints"] = ["risk": ["url": collector.url("/tokens"), "format": "jwt"]]
                config["signing"] = ["audience": "https://risk.example", "keyFile": geolocate.home.appendingPathComponent("device-key").path,
                                     "keyProvider": "tpm", "tpm": tcti]
                var actions = config["actions"] as? [String: Any] ?? [:]
                var login = actions["login"] as? [String: Any] ?? [:]
                login["endpoint"] = "risk"
                actions["login"] = login
                config["actions"] = actions
            }
        }
        try configure(tcti: tpm.tcti)
        let made = try geolocate.run(["key", "init", "--config", geolocate.configPath])
        #expect(made.status == 0, "\(made.stderr)")
        let jwks = geolocate.home.appendingPathComponent("device.jwks").path
        try made.stdout.write(toFile: jwks, atomically: true, encoding: .utf8)
        let signed = try gate.login(replay: PAMEndToEndTests.kiosk)
        #expect(signed.status == 0, "\(signed.log)")
        #expect(try gate.decisionLine(signed, priority: 5).contains("decision=allow"))
        let request = try #require(collector.requests("/tokens").first, "\(signed.log)")
        let token = request.body.trimmingCharacters(in: .whitespacesAndNewlines)
        let decoded = try Spawn.run(["/usr/bin/python3", TPMKeyEndToEndTests.tool, "decode", token, jwks])
        #expect(decoded.status == 0, "PyJWT ES256: \(String(decoding: decoded.stderr, as: UTF8.self))")
        let claims = try JSONSerialization.jsonObject(with: decoded.stdout) as? [String: Any]
        #expect(claims?["sub"] as? String == "alice", "\(claims ?? [:])")

        // The same key file, its TPM now a peer that accepts and never answers.
        let port = try TPMLoopback.freePortPair()
        let server = try TPMLoopback.listener(port: port), control = try TPMLoopback.listener(port: port + 1)
        defer { close(server); close(control) }
        try configure(tcti: "swtpm:host=127.0.0.1,port=\(port)")
        let started = ContinuousClock.now
        let silent = try gate.login(replay: PAMEndToEndTests.kiosk, ["--timeout", "2s"])
        let took = ContinuousClock.now - started
        #expect(silent.status == 0, "the decision stands: \(silent.log)")
        #expect(try gate.decisionLine(silent, priority: 5).contains("decision=allow"))
        // 2 s, the 200 ms SPEC §14 allows, and pamtester's own start.
        #expect(took < .milliseconds(3000), "took \(took)")
        #expect(collector.requests("/tokens").count == 1, "no token without a signature")
    }
}
