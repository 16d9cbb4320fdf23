import Crypto
import Foundation
@testable import GeolocateConfig
@testable import GeolocateCore
@testable import GeolocateDelivery
@testable import GeolocateModel
@testable import GeolocateSpool
import Logging
import Testing

/// The JWS framing and the token's bytes, against RFC 8037's worked example and a golden token.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct LocationTokenTests {
    /// RFC 8037 Appendix A.1: the Ed25519 key of RFC 8032's first test vector.
    static var rfcKey: Curve25519.Signing.PrivateKey {
        get throws { try Curve25519.Signing.PrivateKey(rawRepresentation: Data(base64URL: "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A") ?? Data()) }
    }

    /// Found by a hostile pass: `key rotate` with a stdout that fails had already replaced the
    /// key, and the statement a server needs to follow it was lost. Now the old key stays until
    /// the statement is out.
    @Test func aRotationWhoseStatementCannotBeWrittenKeepsTheOldKey() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("rotate-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: home) }
        // Its own configuration named, so a root run is not system mode (whose key is /etc/geolocate's).
        let context = CommandContext(settings: Settings(), configPath: home + "/config.json", environment: ["GEOLOCATE_CONFIG": home + "/config.json"],
                                     stateDirectory: home + "/state",
                                     clock: FixedClock(1_795_000_000_000), elapsed: ManualMonotonicClock(),
                                     logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        try DeviceKey.initialize(in: context, replacing: false) { _ in }
        let before = try DeviceKey.show(in: context, pem: false, all: true)
        #expect(throws: GeolocateError.self) {
            try DeviceKey.rotate(in: context) { _ in throw GeolocateError.outputFailed(reason: "stdout: no space left on device") }
        }
        #expect(try DeviceKey.show(in: context, pem: false, all: true) == before, "the key changed though its statement was lost")
        var statement = ""
        try DeviceKey.rotate(in: context) { statement = $0 }
        #expect(statement.split(separator: ".").count == 3)
        #expect(try DeviceKey.show(in: context, pem: false, all: true) != before)
    }

    @Test func theThumbprintIsRFC8037s() throws {
        let key = try LocationTokenTests.rfcKey
        // RFC 8037 A.2 (the public key) and A.3 (its RFC 7638 thumbprint).
        #expect(Base64URL.encode(key.publicKey.rawRepresentation) == "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
        #expect(DevicePublicKey.ed25519(key.publicKey).thumbprint == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k")
    }

    /// RFC 7515 A.3's P-256 key: its thumbprint and SubjectPublicKeyInfo as Python's hashlib
    /// and `cryptography` compute them.
    @Test func aP256KeysThumbprintIsRFC7638s() throws {
        let key = DevicePublicKey.p256(try LocationTokenTests.rfcP256Key)
        #expect(key.thumbprint == "oKIywvGUpTVTyxMQ3bwIIeQUudfr_CkLMjCE19ECD-U")
        #expect(key.subjectPublicKeyInfo.map { String(format: "%02x", $0) }.joined()
            == "3059301306072a8648ce3d020106082a8648ce3d030107034200047fcdce2770f6c45d4183cbee6fdb4b7b580733357be9ef13bacf6e3c7bd15445"
            + "c7f144cd1bbd9b7e872cdfedb9eeb9f4b3695d6ea90b24ad8a4623288588e5ad")
        var json = JSONWriter()
        key.writeJWK(to: &json)
        #expect(json.text == #"{"crv":"P-256","kid":"oKIywvGUpTVTyxMQ3bwIIeQUudfr_CkLMjCE19ECD-U","kty":"EC","#
            + #""x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#)
    }

    /// RFC 7515 A.3's public key.
    static var rfcP256Key: P256.Signing.PublicKey {
        get throws {
            let x = try #require(Data(base64URL: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"))
            let y = try #require(Data(base64URL: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"))
            return try P256.Signing.PublicKey(x963Representation: Data([4]) + x + y)
        }
    }

    /// A key kept in a TPM is a handle, an authorisation and a public key in its file; without
    /// a TPM it is shown, not used: signing says so in one line.
    @Test func aTPMKeyFileRoundTripsAndSignsOnlyThroughATPM() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("geolocate-key-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/device-key"
        let edwards = DeviceKey(privateKey: try LocationTokenTests.rfcKey)
        let reference = TPMKeyReference(tcti: "", handle: 0x8100_0012, authorization: Array(repeating: 7, count: 32))
        let (inTPM, forgotten) = edwards.rotated(to: .tpm(reference, try LocationTokenTests.rfcP256Key, nil))
        #expect(forgotten == 0)
        try inTPM.save(to: path, replacing: false)
        let loaded = try DeviceKey.load(from: path, tcti: "swtpm:port=1")
        guard case .tpm(let read, let publicKey, nil) = loaded.signing else { Issue.record("not a TPM key: \(loaded.signing)"); return }
        #expect(read == TPMKeyReference(tcti: "swtpm:port=1", handle: 0x8100_0012, authorization: reference.authorization))
        let expected = try LocationTokenTests.rfcP256Key
        #expect(publicKey.x963Representation == expected.x963Representation)
        #expect(loaded.keyID == "oKIywvGUpTVTyxMQ3bwIIeQUudfr_CkLMjCE19ECD-U")
        #expect(loaded.retired.map(\.thumbprint) == [edwards.keyID])
        // Back to a file key: the TPM key is listed as retired, a P-256 PUBLIC KEY.
        try loaded.rotated(to: .ed25519(.init())).key.save(to: path, replacing: true)
        #expect(try DeviceKey.load(from: path).retired.map(\.thumbprint) == [loaded.keyID, edwards.keyID])
        #expect(throws: GeolocateError.missingSetting("the device key is in a TPM (0x81000012), which this command cannot reach")) {
            _ = try JWS.compact(type: "JWT", payload: [], key: loaded.signing)
        }
    }

    @Test func theCompactSerializationIsRFC8037s() throws {
        // RFC 8037 A.4: header {"alg":"EdDSA"}, payload "Example of Ed25519 signing".
        let key = try LocationTokenTests.rfcKey
        let token = try JWS.compact(header: Array(#"{"alg":"EdDSA"}"#.utf8), payload: Array("Example of Ed25519 signing".utf8),
                                    key: .ed25519(key))
        #expect(token == "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc."
            + "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg")
    }

    /// A fixed key, record and clock give the same bytes on every build: the token's format is
    /// pinned (the integration tests check that PyJWT verifies tokens of this shape).
    @Test func aGoldenToken() throws {
        let fix = Fix(timestamp: 1_763_783_056_000, latitude: 53.3613367, longitude: -6.50562, mode: .threeD,
                      altitudeHAE: 116.94, speed: 1.234, course: 87.25, horizontalAccuracy: 12.06, verticalAccuracy: 20,
                      provider: .gpsd)
        var record = Record(id: "8a3c8f0e-6a0f-4b7c-9f5e-1d2c3b4a5f60", action: "login", triggeredAt: 1_763_783_057_123,
                            requestedMode: "default", collectionMode: "force-current", fix: fix, permissions: [.fine],
                            origin: .current, fallbackReason: nil, errorCode: .none)
        record.subject = Subject(user: "alice", service: "sshd", remoteHost: nil, tty: nil)
        let token = LocationToken(issuer: "5c6657d6-461b-4562-8d26-966f0e90211e", audience: "https://risk.example", nonce: "n-123",
                                  issuedAt: 1_763_783_058, lifetimeMilliseconds: 120_000)
        let key = DeviceKey(privateKey: try LocationTokenTests.rfcKey)
        let compact = try token.compact(record, policy: .unrestricted, key: key)
        let golden = try String(contentsOf: TestPaths.fixture("location-token.jwt"), encoding: .utf8)
        #expect(compact + "\n" == golden)
        let parts = compact.split(separator: ".").map { String(decoding: Data(base64URL: String($0)) ?? Data(), as: UTF8.self) }
        #expect(parts[0] == #"{"alg":"EdDSA","kid":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k","typ":"JWT"}"#)
        #expect(parts[1].hasPrefix(#"{"arrivedAt":1763783056000,"aud":"https://risk.example","exp":1763783178,"fixTime":1763783056000,"#
            + #""iat":1763783058,"iss":"5c6657d6-461b-4562-8d26-966f0e90211e","jti":"8a3c8f0e-6a0f-4b7c-9f5e-1d2c3b4a5f60","loc":{"id":"#))
        #expect(parts[1].hasSuffix(#"},"nonce":"n-123","src":"gpsd","sub":"alice"}"#))
    }

    /// The hand-written base64url against Foundation's base64 with RFC 7515's replacements.
    @Test func base64URLIsFoundationsWithoutPadding() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expected = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == expected, "\(length) bytes")
        }
    }

    /// The strict decoder against Foundation's decoding (padding and RFC 7515's replacements
    /// undone by hand): every canonical text decodes to Foundation's bytes; padding, the
    /// standard alphabet, a length of 4n+1 and spare bits set are refused.
    @Test func base64URLDecodesOnlyCanonicalText() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                + String(repeating: "=", count: (4 - text.count % 4) % 4)
            #expect(Base64URL.decode(text) == Data(base64Encoded: standard).map { Array($0) }, "\(length) bytes")
        }
        for refused in ["AA==", "AA=", "+w", "/w", "A", "AAAAA", "AB", "AAB", "A A", "Zg\n"] {
            #expect(Base64URL.decode(refused) == nil, "\(refused)")
        }
        #expect(Base64URL.decode("_w") == [0xFF] && Base64URL.decode("-g") == [0xFA] && Base64URL.decode("") == [])
    }

    /// An endpoint's tokens name its URL as the server knows itself: no credentials, the rest kept.
    @Test func theAudienceOfAnEndpointIsItsURLWithoutCredentials() {
        #expect(Endpoint(name: "x", url: "http://u:p@127.0.0.1:8080/jwt?token=abc#frag").audienceURL == "http://127.0.0.1:8080/jwt?token=abc#frag")
        #expect(Endpoint(name: "x", url: "https://risk.example/t").audienceURL == "https://risk.example/t")
    }

    /// Only a killed writer's temporary copies are removed beside the key, nothing else.
    @Test func onlyTemporaryCopiesOfTheKeyAreCleanedUp() {
        #expect(DeviceKey.isTemporaryCopy(".device-key.a1B2c3", of: "device-key"))
        #expect(DeviceKey.isTemporaryCopy("device-key.4242.tmp", of: "device-key"))
        for other in ["device-key.lock", "device-key.pub", "id.pub", ".device-key.a1B2c", ".device-key.a1B2c3d", "device-key.x.tmp",
                      "device-key..tmp", ".device-key.a1-2c3"] {
            #expect(!DeviceKey.isTemporaryCopy(other, of: other.hasPrefix("id") ? "id" : "device-key"), "\(other)")
        }
    }

    @Test func rotationKeepsAtMostTheRetiredKeysAFileHolds() throws {
        let many = (0..<DeviceKey.maximumRetired).map { _ in DevicePublicKey.ed25519(Curve25519.Signing.PrivateKey().publicKey) }
        let key = DeviceKey(privateKey: .init(), retired: many)
        let (next, forgotten) = key.rotated(to: .ed25519(.init()))
        #expect(forgotten == 1 && next.retired.count == DeviceKey.maximumRetired)
        #expect(next.retired.first?.thumbprint == key.keyID)
        #expect(next.jwkSet(issuer: "i", includingRetired: true).utf8.count < DeviceKey.maximumBytes)
    }

    @Test func aKeyFileRoundTripsAndKeepsRetiredKeys() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("geolocate-key-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/device-key"
        let first = DeviceKey(privateKey: try LocationTokenTests.rfcKey)
        try first.save(to: path, replacing: false)
        #expect(throws: GeolocateError.self) { try DeviceKey(privateKey: .init()).save(to: path, replacing: false) }
        let second = try DeviceKey.load(from: path).rotated(to: .ed25519(.init())).key
        try second.save(to: path, replacing: true)
        let loaded = try DeviceKey.load(from: path)
        #expect(loaded.keyID == second.keyID)
        #expect(loaded.retired.map(\.thumbprint) == [first.keyID])
        #expect(loaded.jwkSet(issuer: "i", includingRetired: true) == second.jwkSet(issuer: "i", includingRetired: true))
        // The signing key and a retired one pasted in again are listed once each.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try FileManager.default.removeItem(atPath: path)
        try (text + second.publicPEM() + first.publicPEM()).write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o600)
        let repeated = try DeviceKey.load(from: path)
        #expect(repeated.retired.map(\.thumbprint) == [first.keyID])
    }
}

extension Data {
    /// Base64url without padding, as JWS parts and RFC 8037's examples are written.
    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        self.init(base64Encoded: base64)
    }
}
