import Crypto
import Foundation
import TPM
import TestSupport

/// The risk server's verifier as it ships (Examples/verify/verify.py, run by /usr/bin/python3
/// with PyJWT and cryptography), with a store in a directory of its own, removed with it.
final class Verifier {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Examples/verify/verify.py").path

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("geolocate-verifier-\(UUID().uuidString)")
    var store: String { directory.appendingPathComponent("server.store").path }

    init() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    /// What one run of the verifier did.
    struct Outcome: CustomStringConvertible {
        let status: Int32
        let output: String
        let errors: String

        /// The one line a refusal prints, `refused: REASON`, when the run was one.
        var refusal: String? {
            let lines = errors.split(separator: "\n")
            guard status == 1, output.isEmpty, lines.count == 1, lines[0].hasPrefix("refused: ") else { return nil }
            return String(lines[0])
        }

        var description: String { "exit \(status): \(output)\(errors)" }
    }

    /// Runs `verify.py --store STORE [--ca PEM]… ARGUMENTS` with `input` on stdin.
    func run(_ arguments: [String], trusting authorities: [URL] = [], input: String = "") throws -> Outcome {
        let name = UUID().uuidString
        let stdin = directory.appendingPathComponent("\(name).in"), stdout = directory.appendingPathComponent("\(name).out"),
            stderr = directory.appendingPathComponent("\(name).err")
        try Data(input.utf8).write(to: stdin)
        _ = FileManager.default.createFile(atPath: stdout.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.script, "--store", store] + authorities.flatMap { ["--ca", $0.path] } + arguments
        process.standardInput = try FileHandle(forReadingFrom: stdin)
        process.standardOutput = try FileHandle(forWritingTo: stdout)
        process.standardError = try FileHandle(forWritingTo: stderr)
        try process.run()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: try String(contentsOf: stdout, encoding: .utf8),
                       errors: try String(contentsOf: stderr, encoding: .utf8))
    }

    /// Trusts `jwk` (a public JWK's JSON) as the signing key of device `iss`, as from `geolocate key show`.
    func enrol(iss: String, jwk: String) throws -> Outcome {
        let file = directory.appendingPathComponent("\(UUID().uuidString).keys.json")
        try Data(#"{"iss":"\#(iss)","keys":[\#(jwk)]}"#.utf8).write(to: file)
        return try run(["enrol", file.path])
    }

    /// A nonce the verifier issues for device `iss`.
    func nonce(iss: String) throws -> String {
        let outcome = try run(["nonce", iss])
        guard outcome.status == 0 else { throw SoftwareTPMError(message: "no nonce: \(outcome)") }
        return outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// JOSE's pieces, written here from RFC 7515, 7517 and 7638 (not from geolocate's own code), so
/// that what the verifier accepts is checked against the standards rather than against itself.
enum JOSE {
    static func base64URL<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func base64URL(_ text: String) -> String { base64URL(Array(text.utf8)) }

    static func decode(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).map(Array.init)
    }

    /// A P-256 public JWK, members in the order `key show` prints them, and its RFC 7638 kid.
    static func jwk(_ point: TPMKey.PublicPoint) -> (kid: String, json: String) { jwk(x: point.x, y: point.y) }

    static func jwk(x xBytes: [UInt8], y yBytes: [UInt8]) -> (kid: String, json: String) {
        let x = base64URL(xBytes), y = base64URL(yBytes)
        let kid = base64URL(SHA256.hash(data: Data(#"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#.utf8)))
        return (kid, #"{"crv":"P-256","kid":"\#(kid)","kty":"EC","x":"\#(x)","y":"\#(y)"}"#)
    }

    /// An Ed25519 public JWK (RFC 8037) and its kid.
    static func jwk(_ key: Curve25519.Signing.PublicKey) -> (kid: String, json: String) {
        let x = base64URL(key.rawRepresentation)
        let kid = base64URL(SHA256.hash(data: Data(#"{"crv":"Ed25519","kty":"OKP","x":"\#(x)"}"#.utf8)))
        return (kid, #"{"crv":"Ed25519","kid":"\#(kid)","kty":"OKP","x":"\#(x)"}"#)
    }

    /// A compact JWS of `claims` whose signature `sign` makes of the signing input.
    static func compact(alg: String, kid: String, typ: String = "JWT", claims: String, sign: ([UInt8]) throws -> [UInt8]) rethrows -> String {
        let input = base64URL(#"{"alg":"\#(alg)","kid":"\#(kid)","typ":"\#(typ)"}"#) + "." + base64URL(claims)
        return input + "." + base64URL(try sign(Array(input.utf8)))
    }

    /// The claims `check` requires of a location token, issued now by `iss` for `audience`.
    static func claims(iss: String, audience: String) -> String {
        let now = Int(Date().timeIntervalSince1970)
        return #"{"aud":"\#(audience)","exp":\#(now + 300),"iat":\#(now),"iss":"\#(iss)","jti":"\#(UUID().uuidString)","loc":{"lat":53.38,"lon":-6.6}}"#
    }
}
