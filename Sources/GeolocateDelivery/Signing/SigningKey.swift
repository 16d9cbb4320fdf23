import Crypto
import Foundation
import GeolocateModel

/// The key that signs a device's tokens: an Ed25519 key from the key file (EdDSA), or a
/// P-256 key inside a TPM (ES256), which signs only through `tpm`.
package enum SigningKey: Sendable {
    case ed25519(Curve25519.Signing.PrivateKey)
    /// The key in the TPM, its public key (kept in the key file, so that `kid` and `key show`
    /// need no TPM), and the adapter that reaches the TPM (`nil`: this process cannot sign).
    case tpm(TPMKeyReference, P256.Signing.PublicKey, (any TPMAccess)?)

    package var publicKey: DevicePublicKey {
        switch self {
        case .ed25519(let key): .ed25519(key.publicKey)
        case .tpm(_, let key, _): .p256(key)
        }
    }

    /// The signature of `input`, as the JWS algorithm `publicKey.algorithm` writes it.
    ///
    /// A TPM's signature is checked against the key file's public key before it is used: a
    /// file whose public key was changed, or a handle that now holds another key, would
    /// otherwise sign tokens (and rotation statements) under a `kid` that never made them.
    /// - Throws: `GeolocateError.missingSetting` (78) when a TPM key has no TPM to sign in,
    ///   the TPM refuses or does not answer, or its key is not the key file's.
    func signature(for input: UnsafeRawBufferPointer) throws -> [UInt8] {
        switch self {
        case .ed25519(let key):
            return Array(try key.signature(for: input))
        case .tpm(let reference, let publicKey, let access):
            guard let access else {
                throw GeolocateError.missingSetting("the device key is in a TPM (\(reference.handleText)), which this command cannot reach")
            }
            let signature = try access.sign(input, with: reference)
            guard let checked = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
                  publicKey.isValidSignature(checked, for: input) else {
                throw GeolocateError.missingSetting("""
                    the TPM at \(reference.tcti) holds another key at \(reference.handleText) than the key file names \
                    (the file changed, or the handle was given another key): nothing was signed; \
                    geolocate key init --force-new makes a new key, to enrol again
                    """)
            }
            return signature
        }
    }
}

/// A device's public key, signing or retired: what a server enrols and checks tokens with.
package enum DevicePublicKey: Sendable {
    case ed25519(Curve25519.Signing.PublicKey)
    case p256(P256.Signing.PublicKey)

    /// The JWS `alg` of its tokens (RFC 8037 EdDSA, RFC 7518 ES256).
    package var algorithm: String {
        switch self {
        case .ed25519: "EdDSA"
        case .p256: "ES256"
        }
    }

    /// The key's bytes, one form per key: what tells two keys apart.
    var identity: Data {
        switch self {
        case .ed25519(let key): key.rawRepresentation
        case .p256(let key): key.x963Representation
        }
    }

    /// RFC 7638: SHA-256 of the required members in lexicographic order with no spaces,
    /// base64url; the `kid` of its tokens.
    package var thumbprint: String {
        let members: String
        switch self {
        case .ed25519(let key):
            members = #"{"crv":"Ed25519","kty":"OKP","x":"\#(Base64URL.encode(key.rawRepresentation))"}"#
        case .p256:
            let (x, y) = coordinates
            members = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        }
        return Base64URL.encode(Data(SHA256.hash(data: Data(members.utf8))))
    }

    /// A P-256 key's `x` and `y`, base64url of 32 bytes each (empty for Ed25519).
    private var coordinates: (x: String, y: String) {
        guard case .p256(let key) = self else { return ("", "") }
        let point = key.x963Representation  // 04 ‖ x ‖ y
        return (Base64URL.encode(point.dropFirst().prefix(32)), Base64URL.encode(point.suffix(32)))
    }

    /// The key as a JWK: RFC 8037's `crv`, `kid`, `kty`, `x` for Ed25519; RFC 7518's `crv`,
    /// `kid`, `kty`, `x`, `y` for P-256; members in that order.
    package func writeJWK(to json: inout JSONWriter) {
        json.beginObject()
        switch self {
        case .ed25519(let key):
            json.string("crv", "Ed25519")
            json.string("kid", thumbprint)
            json.string("kty", "OKP")
            json.string("x", Base64URL.encode(key.rawRepresentation))
        case .p256:
            let (x, y) = coordinates
            json.string("crv", "P-256")
            json.string("kid", thumbprint)
            json.string("kty", "EC")
            json.string("x", x)
            json.string("y", y)
        }
        json.endObject()
    }

    /// DER of `SubjectPublicKeyInfo` (RFC 8410 §4, RFC 5480), as `BEGIN PUBLIC KEY` holds it.
    var subjectPublicKeyInfo: Data {
        switch self {
        case .ed25519(let key): Data(DevicePublicKey.ed25519SPKIPrefix) + key.rawRepresentation
        case .p256(let key): key.derRepresentation
        }
    }

    /// The key a `BEGIN PUBLIC KEY` block holds, Ed25519 or P-256; `nil` for anything else.
    init?(subjectPublicKeyInfo der: Data) {
        if der.count == 44, Array(der.prefix(12)) == DevicePublicKey.ed25519SPKIPrefix,
           let key = try? Curve25519.Signing.PublicKey(rawRepresentation: der.suffix(32)) {
            self = .ed25519(key)
        } else if let key = try? P256.Signing.PublicKey(derRepresentation: der) {
            self = .p256(key)
        } else {
            return nil
        }
    }

    /// DER of `SubjectPublicKeyInfo` for Ed25519 (RFC 8410 §4) before the 32-byte key.
    static let ed25519SPKIPrefix: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]
}
