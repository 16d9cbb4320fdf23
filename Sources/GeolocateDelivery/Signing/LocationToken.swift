import Crypto
import Foundation
import GeolocateModel

/// A location token (SPEC §15): the record, signed by the device key as a compact JWS (RFC 7515)
/// with JWT claims (RFC 7519), so a server can check that this device sent this location for
/// this login, unchanged since.
///
/// The header is `{"alg":"EdDSA","kid":…,"typ":"JWT"}` and nothing else: no `jwk` or `jku`, so
/// a verifier has to take the key it knows for the device. The claims are written once, keys
/// sorted, each once; `loc` is the §3.1 record exactly as `--format mosaic` prints it under the
/// same output policy.
package struct LocationToken: Sendable {
    /// `iss`: the install's device id.
    package var issuer: String
    /// `aud`: who the token is for (`--audience`, `signing.audience`).
    package var audience: String
    /// `nonce`: the server's challenge for this login, when it gave one.
    package var nonce: String?
    /// `iat`, in seconds since 1970: when the token was signed, by the device's clock.
    package var issuedAt: Int64
    /// How long the token holds (`signing.tokenLifetime`), in milliseconds.
    package var lifetimeMilliseconds: Int64

    package init(issuer: String, audience: String, nonce: String?, issuedAt: Int64, lifetimeMilliseconds: Int64) {
        self.issuer = issuer
        self.audience = audience
        self.nonce = nonce
        self.issuedAt = issuedAt
        self.lifetimeMilliseconds = lifetimeMilliseconds
    }

    /// `record`, under `policy`, as a compact JWS signed with `key`.
    package func compact(_ record: Record, policy: OutputPolicy, key: DeviceKey) throws -> String {
        var out: [UInt8] = []
        try append(record, policy: policy, key: key.signing, header: JWS.header(type: "JWT", key: key.signing), to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The same appended to `out`, with the header's encoding made once (`JWS.header`), as a
    /// signer of many does.
    package func append(_ record: Record, policy: OutputPolicy, key: SigningKey, header: [UInt8],
                        to out: inout [UInt8]) throws {
        try JWS.append(encodedHeader: header, payload: claims(record, policy: policy), key: key, to: &out)
    }

    /// The claims, keys in sorted order. The provenance claims (`src`, `fixQuality`, `fixTime`,
    /// `arrivedAt`, `systemClockSynchronized`) are outside `loc`, where no `fields.*` or privacy setting
    /// removes them; times in them are epoch milliseconds, as in records (`iat` and `exp`
    /// are seconds, as JWT says).
    package func claims(_ record: Record, policy: OutputPolicy) -> [UInt8] {
        let fix = record.fix
        var json = JSONWriter(capacity: 1024)
        json.beginObject()
        if let fix { json.integer("arrivedAt", fix.receivedAt ?? fix.timestamp) }
        json.string("aud", audience)
        json.integer("exp", issuedAt.addingClamped(max(lifetimeMilliseconds, 1000) / 1000))
        if let fix { json.stringIfPresent("fixQuality", fix.quality?.rawValue) }
        if let fix { json.integer("fixTime", fix.timestamp) }
        if fix != nil, let signals = record.signals { LocationToken.writeGNSSAuthentication(signals, to: &json) }
        json.integer("iat", issuedAt)
        json.string("iss", issuer)
        json.string("jti", record.id)
        json.member("loc") { MosaicEncoder.write(policy.applied(to: record), to: &$0) }
        json.stringIfPresent("nonce", nonce)
        if let fix { json.string("src", LocationToken.source(of: fix)) }
        json.stringIfPresent("sub", record.subject?.user)
        json.boolIfPresent("systemClockSynchronized", record.signals?.systemClockSynchronized)
        json.endObject()
        return json.bytes
    }

    /// `gnssAuth`: what the receiver said of OSNMA (SPEC §15), each member null when it said
    /// nothing, so a server tells "not authenticated" from "not known".
    static func writeGNSSAuthentication(_ signals: Signals, to json: inout JSONWriter) {
        json.beginObject("gnssAuth")
        json.integer("authenticatedSatellites", signals.authenticatedSatellites.map { Int64($0) })
        json.bool("fixAuthenticated", orNull: signals.gnssAuthenticated)
        if let status = signals.osnmaStatus { json.string("osnma", status.rawValue) } else { json.null("osnma") }
        json.endObject()
    }

    /// `src`: `gpsd`; `tty` for a receiver read directly from a terminal, whose fixes are
    /// live (dated by their arrival); `replay` for NMEA from a file, pipe or FIFO.
    static func source(of fix: Fix) -> String {
        switch fix.provider {
        case .gpsd: return "gpsd"
        case .nmeaReplay: return fix.isReplayed ? "replay" : "tty"
        }
    }
}
