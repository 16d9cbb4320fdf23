import Crypto
import Foundation
import GeolocateModel

/// The JWS Compact Serialization (RFC 7515 §7.1) with EdDSA (RFC 8037) or ES256 (RFC 7518
/// §3.4): the signing input is `BASE64URL(header) "." BASE64URL(payload)`, and the signature
/// is the key's over its bytes (ES256's as r‖s, 32 bytes each).
package enum JWS {
    /// The token: header `{"alg":…,"kid":…,"typ":type}`, `payload` as given, signed.
    package static func compact(type: String, payload: [UInt8], key: SigningKey) throws -> String {
        try compact(encodedHeader: header(type: type, key: key), payload: payload, key: key)
    }

    /// The token of `header` and `payload` as given, signed with `key`.
    package static func compact(header: [UInt8], payload: [UInt8], key: SigningKey) throws -> String {
        var encoded: [UInt8] = []
        Base64URL.append(header, to: &encoded)
        return try compact(encodedHeader: encoded, payload: payload, key: key)
    }

    /// `{"alg":…,"kid":…,"typ":type}`, base64url: the same for every token of a key.
    package static func header(type: String, key: SigningKey) -> [UInt8] {
        var header = JSONWriter(capacity: 96)
        header.beginObject()
        header.string("alg", key.publicKey.algorithm)
        header.string("kid", key.publicKey.thumbprint)
        header.string("typ", type)
        header.endObject()
        var encoded: [UInt8] = []
        Base64URL.append(header.bytes, to: &encoded)
        return encoded
    }

    /// The token of an encoded header and `payload`, signed with `key`.
    static func compact(encodedHeader: [UInt8], payload: [UInt8], key: SigningKey) throws -> String {
        var token: [UInt8] = []
        try append(encodedHeader: encodedHeader, payload: payload, key: key, to: &token)
        return String(decoding: token, as: UTF8.self)
    }

    /// Appends the token to `out`, where its signing input is written and signed in place: a
    /// batch's tokens go into one buffer, never a string each.
    static func append(encodedHeader: [UInt8], payload: [UInt8], key: SigningKey, to out: inout [UInt8]) throws {
        let start = out.count
        out.reserveCapacity(start + encodedHeader.count + payload.count * 4 / 3 + 100)
        out.append(contentsOf: encodedHeader)
        out.append(UInt8(ascii: "."))
        Base64URL.append(payload, to: &out)
        let signature = try out.withUnsafeBytes { try key.signature(for: UnsafeRawBufferPointer(rebasing: $0[start...])) }
        out.append(UInt8(ascii: "."))
        Base64URL.append(signature, to: &out)
    }
}
