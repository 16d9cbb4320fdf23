import Crypto
import Foundation
import GeolocateModel

/// What `key rotate` prints: the old key's signed word that a new key follows it, so a server
/// that holds the old public key can take the new one without trusting it blindly.
package struct KeyRotation: Sendable {
    package var old: DeviceKey
    package var new: DeviceKey
    /// `iss`: the install's device id.
    package var issuer: String
    /// `iat`, in seconds since 1970.
    package var issuedAt: Int64

    package init(old: DeviceKey, new: DeviceKey, issuer: String, issuedAt: Int64) {
        self.old = old
        self.new = new
        self.issuer = issuer
        self.issuedAt = issuedAt
    }

    /// A compact JWS, `typ` `key-rotation+jwt`, signed by the old key (`kid`), whose claims are
    /// `iat`, `iss`, `jwk` (the new public key) and `sub` (its `kid`).
    package func compact() throws -> String {
        var json = JSONWriter(capacity: 256)
        json.beginObject()
        json.integer("iat", issuedAt)
        json.string("iss", issuer)
        json.member("jwk") { new.signing.publicKey.writeJWK(to: &$0) }
        json.string("sub", new.keyID)
        json.endObject()
        return try JWS.compact(type: "key-rotation+jwt", payload: json.bytes, key: old.signing)
    }
}
