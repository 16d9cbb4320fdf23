import Crypto
import Foundation
import GeolocateModel
import TPM
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `TPMKey` against a real TPM 2.0 implementation (swtpm), its signatures checked by two
/// verifiers that share nothing with the TPM: swift-crypto's P-256 and OpenSSL's, through
/// Python's `cryptography`.
@Suite(.tags(.tpm), .timeLimit(.minutes(5)), .serialized) struct TPMKeyTests {
    static let handle: UInt32 = 0x8100_0010
    let clock = SystemMonotonicClock()

    func deadline(_ milliseconds: Int = 10_000) -> Deadline { Deadline(milliseconds: milliseconds, clock: clock) }

    @Test func aKeyMadeInTheTPMSignsWhatP256Verifies() throws {
        let tpm = try SoftwareTPM()
        let (key, point) = try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        #expect(key.authorization.count == 32)
        #expect(try key.publicPoint(deadline: deadline()) == point, "the TPM reads back the point it made")
        let publicKey = try P256.Signing.PublicKey(rawRepresentation: point.x + point.y)
        for message in ["header.payload", "", String(repeating: "a", count: 10_000)] {
            let signature = try key.sign(Array(message.utf8), deadline: deadline())
            #expect(signature.count == 64)
            let parsed = try P256.Signing.ECDSASignature(rawRepresentation: signature)
            #expect(publicKey.isValidSignature(parsed, for: Array(message.utf8)), "swift-crypto: \(message.prefix(20))")
            #expect(try Self.opensslVerifies(point: point, signature: signature, message: Array(message.utf8)), "OpenSSL: \(message.prefix(20))")
            #expect(!publicKey.isValidSignature(parsed, for: Array((message + "x").utf8)), "a signature is for its message only")
        }
    }

    @Test func aKeyThereIsReplacedOnlyWhenAskedTo() throws {
        let tpm = try SoftwareTPM()
        let (first, point) = try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        #expect(throws: GeolocateError.self) { try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: false, deadline: deadline()) }
        do {
            _ = try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        } catch {
            #expect("\(error)".contains("already holds a key at 0x81000010"), "\(error)")
        }
        #expect(try first.publicPoint(deadline: deadline()) == point, "the refused make left the key as it was")
        let (second, replaced) = try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: true, deadline: deadline())
        #expect(replaced != point && second.authorization != first.authorization)
        #expect(try second.publicPoint(deadline: deadline()) == replaced)
        try second.evict(deadline: deadline())
        #expect(throws: GeolocateError.self) { try second.publicPoint(deadline: deadline()) }
    }

    /// Another authorisation value is refused by the TPM, in one line that says so; the key is
    /// outside dictionary-attack protection, so wrong tries, however many, never lock the
    /// device's own signing out.
    @Test func aWrongAuthorisationIsRefused() throws {
        let tpm = try SoftwareTPM()
        let (key, _) = try TPMKey.create(tcti: tpm.tcti, handle: Self.handle, replacing: false, deadline: deadline())
        let forged = TPMKey(tcti: key.tcti, handle: key.handle, authorization: Array(repeating: 7, count: 32))
        for _ in 0..<5 {
            do {
                _ = try forged.sign(Array("x".utf8), deadline: deadline())
                Issue.record("the TPM signed with a wrong authorisation value")
            } catch {
                let text = "\(error)"
                #expect(text.contains("refused the key's authorisation value") && !text.contains("\n"), "\(text)")
            }
        }
        #expect(try key.sign(Array("x".utf8), deadline: deadline()).count == 64, "the right value still signs")
    }

    /// No TPM at the TCTI's address, and a TCTI that cannot be loaded: one line each, at once.
    @Test(arguments: ["swtpm:host=127.0.0.1,port=PORT", "nosuch:anything", "device:/nonexistent/tpmrm0"])
    func noTPMIsOneLine(_ tcti: String) throws {
        let closed = try TPMLoopback.freePortPair()
        let key = TPMKey(tcti: tcti.replacingOccurrences(of: "PORT", with: String(closed)), handle: Self.handle, authorization: [])
        do {
            _ = try key.sign(Array("x".utf8), deadline: deadline())
            Issue.record("signed without a TPM")
        } catch let error as GeolocateError {
            #expect(error.exitStatus == .configuration, "\(error)")
            #expect("\(error)".contains("cannot open the TPM at"), "\(error)")
        }
    }

    /// A `device:` TCTI naming something other than a TPM's character device (a file, a disk,
    /// /dev/zero): refused before the TSS libraries open it, so nothing is written to it.
    @Test func aDeviceThatIsNoTPMIsNeverWritten() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-tpm-\(UUID().uuidString)")
        try Data("a key file".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        for path in [file.path, "/dev/zero", "/dev/null"] {
            let key = TPMKey(tcti: "device:\(path)", handle: Self.handle, authorization: [])
            do {
                _ = try key.sign(Array("x".utf8), deadline: deadline())
                Issue.record("signed with \(path)")
            } catch let error as GeolocateError {
                #expect(error.exitStatus == .configuration && "\(error)".contains("is not a TPM device"), "\(error)")
            }
        }
        #expect(try String(contentsOf: file, encoding: .utf8) == "a key file")
    }

    /// A TCTI whose peer accepts the connection and never answers: the call ends at its
    /// deadline with one line, whatever the TSS libraries are still waiting for.
    @Test func aTPMThatNeverAnswersCostsTheDeadlineOnly() throws {
        let port = try TPMLoopback.freePortPair()
        let server = try TPMLoopback.listener(port: port), control = try TPMLoopback.listener(port: port + 1)
        defer {
            close(server)
            close(control)
        }
        let key = TPMKey(tcti: "swtpm:host=127.0.0.1,port=\(port)", handle: Self.handle, authorization: [])
        let started = clock.nowSeconds
        do {
            _ = try key.sign(Array("x".utf8), deadline: deadline(500))
            Issue.record("a silent TPM signed")
        } catch let error as GeolocateError {
            #expect(error.exitStatus == .configuration && "\(error)".contains("did not answer in time"), "\(error)")
        }
        let waited = clock.nowSeconds - started
        #expect(waited < 1.5, "waited \(waited) s with a 0.5 s deadline")
    }

    /// Whether OpenSSL (Python's `cryptography`) verifies `signature` (r‖s) of `message` by `point`.
    static func opensslVerifies(point: TPMKey.PublicPoint, signature: [UInt8], message: [UInt8]) throws -> Bool {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        let script = """
            import sys
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.asymmetric import ec, utils
            x, y, r, s, message = sys.argv[1:6]
            key = ec.EllipticCurvePublicNumbers(int(x, 16), int(y, 16), ec.SECP256R1()).public_key()
            key.verify(utils.encode_dss_signature(int(r, 16), int(s, 16)), bytes.fromhex(message), ec.ECDSA(hashes.SHA256()))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, hex(point.x), hex(point.y), hex(Array(signature[..<32])), hex(Array(signature[32...])), hex(message)]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}

extension Tag {
    /// Tests that start swtpm.
    @Tag static var tpm: Self
}
