import Crypto
import Foundation
import GeolocateModel
import TPM
import TestSupport
import Testing

/// `TPMKey.attest` and `activate` against swtpm manufactured with endorsement key certificates
/// from a private CA, checked by the verifier a risk server runs (Examples/verify/verify.py):
/// the attestation key enrolled through a real MakeCredential → ActivateCredential round trip,
/// then attestations accepted, and refused for each thing that makes them worthless.
@Suite(.tags(.tpm), .timeLimit(.minutes(5)), .serialized) struct AttestationTests {
    static let handle: UInt32 = 0x8100_0010
    static let audience = "https://risk.example"
    let clock = SystemMonotonicClock()

    func deadline() -> Deadline { Deadline(milliseconds: 30_000, clock: clock) }

    /// A certified swtpm, a key made in it and enrolled by the verifier for `iss`, with the
    /// TPM's attestation key enrolled too.
    struct Device {
        let tpm: SoftwareTPM
        let key: TPMKey
        let kid: String
    }

    func enrolledDevice(_ verifier: Verifier, iss: String = "device-1") throws -> Device {
        let tpm = try SoftwareTPM(certified: true)
        let (key, point) = try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        let (kid, jwk) = JOSE.jwk(point)
        let enrolled = try verifier.enrol(iss: iss, jwk: jwk)
        try #require(enrolled.status == 0, "\(enrolled)")
        try enrolAttestationKey(of: key, tpm: tpm, iss: iss, verifier)
        return Device(tpm: tpm, key: key, kid: kid)
    }

    /// The credential challenge: evidence to `attest-challenge`, its challenge to the TPM, the
    /// TPM's answer to `attest-enrol`.
    func enrolAttestationKey(of key: TPMKey, tpm: SoftwareTPM, iss: String, _ verifier: Verifier) throws {
        let evidence = try key.attest(nonce: Array("enrolment".utf8), deadline: deadline())
        let secret = try key.activate(challenge: try challenge(for: evidence, iss: iss, tpm: tpm, verifier), deadline: deadline())
        let answer = try verifier.run(["attest-enrol", iss], input: JOSE.base64URL(secret))
        try #require(answer.status == 0 && answer.output.hasPrefix("enrolled attestation key "), "\(answer)")
    }

    func challenge(for evidence: TPMAttestation, iss: String, tpm: SoftwareTPM, _ verifier: Verifier) throws -> [[UInt8]] {
        let outcome = try verifier.run(["attest-challenge", iss], trusting: [tpm.rootCertificate, tpm.intermediateCertificate], input: evidence.json)
        try #require(outcome.status == 0, "\(outcome)")
        let parts = outcome.output.trimmingCharacters(in: .newlines).split(separator: ".")
        let decoded = parts.compactMap(JOSE.decode)
        try #require(parts.count == 2 && decoded.count == 2, "the challenge is CREDENTIAL.SECRET: \(outcome)")
        return decoded
    }

    @Test func anAttestationThroughAnEnrolledAttestationKeyIsAccepted() throws {
        let verifier = try Verifier()
        let device = try enrolledDevice(verifier)
        let nonce = try verifier.nonce(iss: "device-1")
        let evidence = try device.key.attest(nonce: Array(nonce.utf8), deadline: deadline())
        let checked = try verifier.run(["attest-check", "device-1", nonce], input: evidence.json)
        #expect(checked.status == 0 && checked.output == "attested \(device.kid)\n", "\(checked)")
        #expect(try verifier.run(["attest-check", "device-1", nonce], input: evidence.json).refusal?.contains("nonce") == true,
                "a nonce is used once")

        let again = try device.key.attest(nonce: Array("another".utf8), deadline: deadline())
        #expect(again.akPublic == evidence.akPublic, "the attestation key is kept, so it is enrolled once")
        #expect(again.ekPublic == evidence.ekPublic && again.pubArea == evidence.pubArea)
        // The JSON members in order, each unpadded base64url.
        let members = ["akPub", "certInfo", "ekCert", "ekPub", "pubArea", "sig"]
        let positions = members.compactMap { evidence.json.range(of: "\"\($0)\":\"")?.lowerBound }
        #expect(positions.count == members.count && positions == positions.sorted(), "\(evidence.json)")
        #expect(evidence.json.hasPrefix("{\"akPub\":\"") && evidence.json.hasSuffix("\"}") && !evidence.json.contains("="))
        // The EK certificate is the one the private CA issued (OpenSSL reads it, and names its issuer).
        #expect(try Self.python(#"""
            import sys
            from cryptography import x509
            from cryptography.x509.oid import NameOID
            cert = x509.load_der_x509_certificate(bytes.fromhex(sys.argv[1]))
            print(cert.issuer.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)
            """#, [Self.hex(evidence.ekCertificate)]) == "swtpm-localca\n")
    }

    @Test func anAttestationForAnotherNonceIsRefused() throws {
        let verifier = try Verifier()
        let device = try enrolledDevice(verifier)
        let issued = try verifier.nonce(iss: "device-1")
        let evidence = try device.key.attest(nonce: Array("not the nonce issued".utf8), deadline: deadline())
        let refusal = try verifier.run(["attest-check", "device-1", issued], input: evidence.json).refusal
        #expect(refusal?.contains("another nonce") == true, "\(refusal ?? "accepted")")
        let unissued = try verifier.run(["attest-check", "device-1", "not the nonce issued"], input: evidence.json).refusal
        #expect(unissued?.contains("not issued here") == true, "\(unissued ?? "accepted")")
    }

    /// One byte of the certified key's public area changed (its point's last byte): the TPM
    /// certified another key than the one the evidence shows.
    @Test func aChangedPublicAreaIsRefused() throws {
        let verifier = try Verifier()
        let device = try enrolledDevice(verifier)
        let nonce = try verifier.nonce(iss: "device-1")
        var evidence = try device.key.attest(nonce: Array(nonce.utf8), deadline: deadline())
        evidence.pubArea[evidence.pubArea.count - 1] ^= 0x01
        let refusal = try verifier.run(["attest-check", "device-1", nonce], input: evidence.json).refusal
        #expect(refusal?.contains("not the hash of pubArea") == true, "\(refusal ?? "accepted")")
    }

    /// A key made outside the TPM and loaded into it (TPM2_LoadExternal, its private key known
    /// to whoever made it): the TPM certifies it, by the enrolled attestation key, but it is
    /// neither fixedTPM nor fixedParent, and the verifier refuses it even though it is the key
    /// enrolled for the device.
    @Test func aKeyFromOutsideTheTPMIsRefused() throws {
        let verifier = try Verifier()
        let tpm = try SoftwareTPM(certified: true)
        let (key, _) = try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        let outside = P256.Signing.PrivateKey()
        let point = Array(outside.publicKey.rawRepresentation)
        let (kid, jwk) = JOSE.jwk(x: Array(point[..<32]), y: Array(point[32...]))
        let enrolled = try verifier.enrol(iss: "outside", jwk: jwk)
        try #require(enrolled.status == 0, "\(enrolled)")
        try enrolAttestationKey(of: key, tpm: tpm, iss: "outside", verifier)
        let nonce = try verifier.nonce(iss: "outside")
        let certified = try Self.python(Self.loadExternalAndCertify, [String(tpm.port), String(key.attestationKeyHandle, radix: 16),
                                                                      Self.hex(Array(nonce.utf8)), Self.hex(Array(outside.rawRepresentation))])
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(certified.utf8)) as? [String: String], "\(certified)")
        func field(_ name: String) throws -> [UInt8] { try #require(fields[name].flatMap { JOSE.decode($0[...]) }, "\(name) in \(certified)") }
        var evidence = try key.attest(nonce: Array(nonce.utf8), deadline: deadline())
        evidence.certInfo = try field("certInfo")
        evidence.signature = try field("sig")
        evidence.pubArea = try field("pubArea")
        let unique: [UInt8] = [0, 32] + point[..<32] + [0, 32] + point[32...]
        #expect(Array(evidence.pubArea.suffix(68)) == unique, "the TPM certified the key enrolled")
        let refusal = try verifier.run(["attest-check", "outside", nonce], input: evidence.json).refusal
        #expect(refusal?.contains("fixedTPM") == true, "\(refusal ?? "accepted \(kid)")")
    }

    /// An EK certificate another CA issued (another swtpm_setup's private CA, with the same
    /// names) does not chain to the CA the server trusts; the server that trusts that CA takes it.
    @Test func anEKCertificateFromAnotherCAIsRefused() throws {
        let verifier = try Verifier()
        let tpm = try SoftwareTPM(certified: true), other = try SoftwareTPM(certified: true)
        let (key, _) = try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        let evidence = try key.attest(nonce: Array("x".utf8), deadline: deadline())
        for authorities in [[other.rootCertificate, other.intermediateCertificate], [other.rootCertificate], [tpm.intermediateCertificate]] {
            let outcome = try verifier.run(["attest-challenge", "device-1"], trusting: authorities, input: evidence.json)
            #expect(outcome.refusal?.contains("chain") == true || outcome.refusal?.contains("signed the certificate") == true, "\(outcome)")
        }
        let trusted = try verifier.run(["attest-challenge", "device-1"], trusting: [tpm.rootCertificate, tpm.intermediateCertificate], input: evidence.json)
        #expect(trusted.status == 0, "\(trusted)")
        var swapped = evidence
        let (stranger, _) = try TPMKey.create(tcti: other.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        swapped.ekPublic = try stranger.attest(nonce: [], deadline: deadline()).ekPublic
        let mismatch = try verifier.run(["attest-challenge", "device-1"], trusting: [tpm.rootCertificate, tpm.intermediateCertificate], input: swapped.json)
        #expect(mismatch.refusal?.contains("not the one its certificate names") == true, "\(mismatch)")
    }

    /// An attestation key never enrolled, a wrong answer to the challenge, a challenge made
    /// for another TPM, and another TPM's attestation key: each refused.
    @Test func anAttestationKeyNotEnrolledIsRefused() throws {
        let verifier = try Verifier()
        let tpm = try SoftwareTPM(certified: true)
        let (key, point) = try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        try #require(try verifier.enrol(iss: "device-1", jwk: JOSE.jwk(point).json).status == 0)
        let nonce = try verifier.nonce(iss: "device-1")
        let evidence = try key.attest(nonce: Array(nonce.utf8), deadline: deadline())
        let never = try verifier.run(["attest-check", "device-1", nonce], input: evidence.json).refusal
        #expect(never?.contains("no attestation key is enrolled") == true, "\(never ?? "accepted")")

        let noChallenge = try verifier.run(["attest-enrol", "device-1"], input: JOSE.base64URL([UInt8](repeating: 1, count: 32))).refusal
        #expect(noChallenge?.contains("no credential challenge") == true, "\(noChallenge ?? "accepted")")
        let sealed = try challenge(for: evidence, iss: "device-1", tpm: tpm, verifier)
        let guessed = try verifier.run(["attest-enrol", "device-1"], input: JOSE.base64URL([UInt8](repeating: 1, count: 32))).refusal
        #expect(guessed?.contains("not the one the challenge sealed") == true, "\(guessed ?? "accepted")")
        #expect(try verifier.run(["attest-check", "device-1", nonce], input: evidence.json).refusal?.contains("no attestation key") == true)

        // Another TPM cannot open the challenge: it holds neither that EK nor that AK.
        let other = try SoftwareTPM(certified: true)
        let (stranger, _) = try TPMKey.create(tcti: other.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        _ = try stranger.attest(nonce: [], deadline: deadline())
        do {
            _ = try stranger.activate(challenge: sealed, deadline: deadline())
            Issue.record("another TPM opened the challenge")
        } catch let error as GeolocateError {
            #expect(error.exitStatus == .configuration && "\(error)".contains("would not open the credential"), "\(error)")
        }
        // A credential for another object's name: the TPM refuses it (integrity check).
        // Four times, more than swtpm's three object slots: a failure leaves nothing loaded.
        var wrongName = sealed
        wrongName[0][wrongName[0].count - 1] ^= 0x01
        for _ in 0..<4 {
            #expect(throws: GeolocateError.self) { try key.activate(challenge: wrongName, deadline: deadline()) }
        }

        let secret = try key.activate(challenge: sealed, deadline: deadline())
        let answer = try verifier.run(["attest-enrol", "device-1"], input: JOSE.base64URL(secret))
        #expect(answer.status == 0, "\(answer)")
        let checked = try verifier.run(["attest-check", "device-1", nonce], input: evidence.json)
        #expect(checked.output == "attested \(JOSE.jwk(point).kid)\n", "\(checked)")

        // The other TPM's evidence, for the same key id: its attestation key is not the enrolled one.
        let issued = try verifier.nonce(iss: "device-1")
        var foreign = try stranger.attest(nonce: Array(issued.utf8), deadline: deadline())
        foreign.pubArea = evidence.pubArea
        let refusal = try verifier.run(["attest-check", "device-1", issued], input: foreign.json).refusal
        #expect(refusal?.contains("another attestation key") == true, "\(refusal ?? "accepted")")
    }

    /// A challenge is answered within 5 minutes or not at all; and once a device's attestation
    /// key is enrolled, an attestation key from another TPM (another EK) takes `--replace`.
    @Test func aChallengeExpiresAndAnotherTPMTakesReplace() throws {
        let verifier = try Verifier()
        let device = try enrolledDevice(verifier)
        let evidence = try device.key.attest(nonce: [], deadline: deadline())
        let authorities = [device.tpm.rootCertificate, device.tpm.intermediateCertificate]
        let now = Int(Date().timeIntervalSince1970)
        let late = try verifier.run(["attest-challenge", "device-1", "--now", String(now)], trusting: authorities, input: evidence.json)
        try #require(late.status == 0, "\(late)")
        let parts = late.output.trimmingCharacters(in: .newlines).split(separator: ".").compactMap(JOSE.decode)
        let secret = try device.key.activate(challenge: parts, deadline: deadline())
        let expired = try verifier.run(["attest-enrol", "device-1", "--now", String(now + 301)], input: JOSE.base64URL(secret)).refusal
        #expect(expired?.contains("expired") == true, "\(expired ?? "accepted")")

        let other = try SoftwareTPM(certified: true)
        let (stranger, _) = try TPMKey.create(tcti: other.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        let moved = try stranger.attest(nonce: [], deadline: deadline())
        let trusting = [other.rootCertificate, other.intermediateCertificate]
        let refusal = try verifier.run(["attest-challenge", "device-1"], trusting: trusting, input: moved.json).refusal
        #expect(refusal?.contains("another TPM") == true, "\(refusal ?? "accepted")")
        let replaced = try verifier.run(["attest-challenge", "device-1", "--replace"], trusting: trusting, input: moved.json)
        #expect(replaced.status == 0, "\(replaced)")
    }

    /// No endorsement key certificate in the TPM (swtpm not manufactured): one line that says
    /// so, four times (more than swtpm's three object slots: a failure leaves nothing loaded).
    @Test func aTPMWithoutAnEKCertificateSaysSo() throws {
        let tpm = try SoftwareTPM()
        let (key, _) = try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        for _ in 0..<4 {
            do {
                _ = try key.attest(nonce: [1, 2, 3], deadline: deadline())
                Issue.record("attested without an EK certificate")
            } catch let error as GeolocateError {
                #expect(error.exitStatus == .configuration && "\(error)".contains("no endorsement key certificate") && !"\(error)".contains("\n"),
                        "\(error)")
            }
        }
        #expect(throws: GeolocateError.self) { try key.attest(nonce: [UInt8](repeating: 0, count: 65), deadline: deadline()) }
        #expect(try key.sign(Array("x".utf8), deadline: deadline()).count == 64)
        #expect(try key.publicPoint(deadline: deadline()).x.count == 32)
    }

    /// Something else at the attestation key's handle (here a signing key, not restricted):
    /// attest says so rather than certify with it; and a wrong authorisation for the key is
    /// the TPM's refusal, in one line.
    @Test func aHandleHoldingNoAttestationKeyIsRefused() throws {
        let tpm = try SoftwareTPM(certified: true)
        let (key, _) = try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        let forged = TPMKey(tcti: key.tcti, handle: key.handle, authorization: Array(repeating: 7, count: 32))
        do {
            _ = try forged.attest(nonce: [1], deadline: deadline())
            Issue.record("certified with a wrong authorisation")
        } catch let error as GeolocateError {
            #expect("\(error)".contains("refused the key's authorisation value"), "\(error)")
        }
        try key.evict(deadline: deadline())
        _ = try TPMKey.create(tcti: tpm.tcti, handle: key.attestationKeyHandle, replacing: true, deadline: deadline())
        let (fresh, _) = try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        do {
            _ = try fresh.attest(nonce: [1], deadline: deadline())
            Issue.record("certified by a key that is no attestation key")
        } catch let error as GeolocateError {
            #expect("\(error)".contains("is no attestation key"), "\(error)")
        }
    }

    // MARK: ES256 tokens

    /// Tokens the TPM key signs (ES256, r‖s) pass the verifier's `check`; the alg must be the
    /// enrolled key's, either way, and r‖s is 64 bytes, not DER.
    @Test func tokensSignedInTheTPMVerifyAsES256() throws {
        let verifier = try Verifier()
        let tpm = try SoftwareTPM()
        let (key, point) = try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        let (kid, jwk) = JOSE.jwk(point)
        let enrolled = try verifier.enrol(iss: "device-1", jwk: jwk)
        #expect(enrolled.status == 0 && enrolled.output == "enrolled device-1 with key \(kid)\n", "\(enrolled)")
        let token = try JOSE.compact(alg: "ES256", kid: kid, claims: JOSE.claims(iss: "device-1", audience: Self.audience)) {
            try key.sign($0, deadline: deadline())
        }
        let checked = try verifier.run(["check", Self.audience], input: token)
        #expect(checked.status == 0 && checked.output.contains(#""iss": "device-1""#), "\(checked)")
        #expect(try verifier.run(["check", Self.audience], input: token).refusal?.contains("used before") == true)

        // The same signature as DER (what OpenSSL writes): refused, r and s are 32 bytes each.
        let der = try JOSE.compact(alg: "ES256", kid: kid, claims: JOSE.claims(iss: "device-1", audience: Self.audience)) {
            try P256.Signing.ECDSASignature(rawRepresentation: try key.sign($0, deadline: deadline())).derRepresentation.map { $0 }
        }
        #expect(try verifier.run(["check", Self.audience], input: der).refusal?.contains("32 bytes") == true)
        // Another key's signature under this kid: refused.
        let forged = JOSE.compact(alg: "ES256", kid: kid, claims: JOSE.claims(iss: "device-1", audience: Self.audience)) {
            Array((try? P256.Signing.PrivateKey().signature(for: $0).rawRepresentation) ?? Data())
        }
        #expect(try verifier.run(["check", Self.audience], input: forged).refusal != nil)

        // An EdDSA token naming the ES256 key: refused before any signature check.
        let ed = Curve25519.Signing.PrivateKey()
        let edToken = try JOSE.compact(alg: "EdDSA", kid: kid, claims: JOSE.claims(iss: "device-1", audience: Self.audience)) {
            Array(try ed.signature(for: $0))
        }
        #expect(try verifier.run(["check", Self.audience], input: edToken).refusal?.contains("not its key's") == true)

        // An ES256 token naming an EdDSA-enrolled key: refused.
        let (edKid, edJWK) = JOSE.jwk(ed.publicKey)
        #expect(try verifier.enrol(iss: "device-2", jwk: edJWK).status == 0)
        let confused = try JOSE.compact(alg: "ES256", kid: edKid, claims: JOSE.claims(iss: "device-2", audience: Self.audience)) {
            try key.sign($0, deadline: deadline())
        }
        #expect(try verifier.run(["check", Self.audience], input: confused).refusal?.contains("not its key's") == true)
        let genuine = try JOSE.compact(alg: "EdDSA", kid: edKid, claims: JOSE.claims(iss: "device-2", audience: Self.audience)) {
            Array(try ed.signature(for: $0))
        }
        #expect(try verifier.run(["check", Self.audience], input: genuine).status == 0, "the EdDSA key still verifies its own tokens")
    }

    /// A device moving from a key file (EdDSA) to the TPM (ES256) by a rotation statement its
    /// old key signs; and back, by one the TPM key signs.
    @Test func aRotationMovesBetweenEdDSAAndES256() throws {
        let verifier = try Verifier()
        let tpm = try SoftwareTPM()
        let (key, point) = try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        let (kid, jwk) = JOSE.jwk(point)
        let old = Curve25519.Signing.PrivateKey()
        let (oldKid, oldJWK) = JOSE.jwk(old.publicKey)
        #expect(try verifier.enrol(iss: "device-1", jwk: oldJWK).status == 0)
        let now = Int(Date().timeIntervalSince1970)
        let statement = try JOSE.compact(alg: "EdDSA", kid: oldKid, typ: "key-rotation+jwt",
                                         claims: #"{"iat":\#(now),"iss":"device-1","jwk":\#(jwk),"sub":"\#(kid)"}"#) { Array(try old.signature(for: $0)) }
        let rotated = try verifier.run(["rotate"], input: statement)
        #expect(rotated.status == 0 && rotated.output.contains("now signs with key \(kid)"), "\(rotated)")
        let token = try JOSE.compact(alg: "ES256", kid: kid, claims: JOSE.claims(iss: "device-1", audience: Self.audience)) {
            try key.sign($0, deadline: deadline())
        }
        let checked = try verifier.run(["check", Self.audience], input: token)
        #expect(checked.status == 0, "\(checked)")

        let next = Curve25519.Signing.PrivateKey()
        let (nextKid, nextJWK) = JOSE.jwk(next.publicKey)
        let back = try JOSE.compact(alg: "ES256", kid: kid, typ: "key-rotation+jwt",
                                    claims: #"{"iat":\#(now),"iss":"device-1","jwk":\#(nextJWK),"sub":"\#(nextKid)"}"#) { try key.sign($0, deadline: deadline()) }
        let again = try verifier.run(["rotate"], input: back)
        #expect(again.status == 0 && again.output.contains("now signs with key \(nextKid)"), "\(again)")
    }

    // MARK: Helpers

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// Runs a Python script (with `cryptography`) and returns its stdout; fails on a non-zero exit.
    static func python(_ script: String, _ arguments: [String]) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("geolocate-python-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("out"), errors = directory.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script] + arguments
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SoftwareTPMError(message: "python: exit \(process.terminationStatus): \(try String(contentsOf: errors, encoding: .utf8))")
        }
        return try String(contentsOf: output, encoding: .utf8)
    }

    /// A P-256 key made outside the TPM (its private scalar the last argument), loaded into it
    /// with TPM2_LoadExternal (so it is neither fixedTPM nor fixedParent), certified by the
    /// attestation key for the nonce, flushed: raw TPM commands on swtpm's port (TPM 2.0 Part 3),
    /// no TSS. Prints certInfo, sig, pubArea, x, y.
    static let loadExternalAndCertify = #"""
        import base64, json, socket, struct, sys
        from cryptography.hazmat.primitives.asymmetric import ec
        port, ak, nonce, private = int(sys.argv[1]), int(sys.argv[2], 16), bytes.fromhex(sys.argv[3]), int(sys.argv[4], 16)
        def b64(data): return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
        def sized(data): return struct.pack(">H", len(data)) + data
        def receive(connection, count):
            data = b""
            while len(data) < count:
                more = connection.recv(count - len(data))
                if not more: sys.exit("swtpm closed the connection")
                data += more
            return data
        def command(tag, code, body):
            for _ in range(5):  # TPM_RC_RETRY, YIELDED, TESTING: sent again, as the TSS does
                with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
                    connection.sendall(struct.pack(">HII", tag, 10 + len(body), code) + body)
                    _, size, rc = struct.unpack(">HII", receive(connection, 10))
                    rest = receive(connection, size - 10)
                if rc not in (0x922, 0x908, 0x90A): break
            if rc: sys.exit(f"TPM command 0x{code:x} failed: 0x{rc:x}")
            return rest
        numbers = ec.derive_private_key(private, ec.SECP256R1()).private_numbers()
        x, y = numbers.public_numbers.x.to_bytes(32, "big"), numbers.public_numbers.y.to_bytes(32, "big")
        # ECC, SHA-256, sign|userWithAuth: no fixedTPM, fixedParent or sensitiveDataOrigin. ECDSA/SHA-256, P-256.
        public = struct.pack(">HHI", 0x23, 0x0B, 0x00040040) + sized(b"") + struct.pack(">HHHHH", 0x10, 0x18, 0x0B, 0x03, 0x10) + sized(x) + sized(y)
        sensitive = struct.pack(">H", 0x23) + sized(b"") + sized(b"") + sized(numbers.private_value.to_bytes(32, "big"))
        reply = command(0x8001, 0x167, sized(sensitive) + sized(public) + struct.pack(">I", 0x40000007))  # LoadExternal, TPM_RH_NULL
        handle = struct.unpack(">I", reply[:4])[0]
        try:
            password = struct.pack(">IHBH", 0x40000009, 0, 0, 0)  # TPM_RS_PW, empty authorisation
            body = struct.pack(">III", handle, ak, 2 * len(password)) + 2 * password + sized(nonce) + struct.pack(">H", 0x10)
            reply = command(0x8002, 0x148, body)  # Certify, the AK's own scheme
        finally:
            command(0x8001, 0x165, struct.pack(">I", handle))  # FlushContext
        parameters = reply[4:4 + struct.unpack(">I", reply[:4])[0]]
        length = struct.unpack(">H", parameters[:2])[0]
        print(json.dumps({"certInfo": b64(parameters[2:2 + length]), "sig": b64(parameters[2 + length:]), "pubArea": b64(public),
                          "x": b64(x), "y": b64(y)}))
        """#
}

extension TPMKey {
    /// `activate` with the verifier's challenge, its two parts decoded.
    func activate(challenge: [[UInt8]], deadline: Deadline) throws -> [UInt8] {
        try activate(credentialBlob: challenge[0], encryptedSecret: challenge[1], deadline: deadline)
    }
}
