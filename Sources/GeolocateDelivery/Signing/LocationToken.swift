import Crypto
import Foundation
import GeolocateConfig
import GeolocateModel
import Synchronization

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
        try append(record, policy: policy, key: key.privateKey, header: JWS.header(type: "JWT", key: key.privateKey), to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The same appended to `out`, with the header's encoding made once (`JWS.header`), as a
    /// signer of many does.
    package func append(_ record: Record, policy: OutputPolicy, key: Curve25519.Signing.PrivateKey, header: [UInt8],
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

    /// `src`: `gpsd`; `tty` for a receiver read directly from a terminal, whose fixes are
    /// live (dated by their arrival); `replay` for NMEA from a file, pipe or FIFO.
    static func source(of fix: Fix) -> String {
        switch fix.provider {
        case .gpsd: return "gpsd"
        case .nmeaReplay: return fix.isReplayed ? "replay" : "tty"
        }
    }
}

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
        json.member("jwk") { DeviceKey.writeJWK(new.privateKey.publicKey, to: &$0) }
        json.string("sub", new.keyID)
        json.endObject()
        return try JWS.compact(type: "key-rotation+jwt", payload: json.bytes, key: old.privateKey)
    }
}

/// The JWS Compact Serialization (RFC 7515 §7.1) with EdDSA (RFC 8037): the signing input is
/// `BASE64URL(header) "." BASE64URL(payload)`, and the signature is Ed25519's over its bytes.
package enum JWS {
    /// The token: header `{"alg":"EdDSA","kid":…,"typ":type}`, `payload` as given, signed.
    package static func compact(type: String, payload: [UInt8], key: Curve25519.Signing.PrivateKey) throws -> String {
        try compact(encodedHeader: header(type: type, key: key), payload: payload, key: key)
    }

    /// The token of `header` and `payload` as given, signed with `key`.
    package static func compact(header: [UInt8], payload: [UInt8], key: Curve25519.Signing.PrivateKey) throws -> String {
        var encoded: [UInt8] = []
        Base64URL.append(header, to: &encoded)
        return try compact(encodedHeader: encoded, payload: payload, key: key)
    }

    /// `{"alg":"EdDSA","kid":…,"typ":type}`, base64url: the same for every token of a key.
    package static func header(type: String, key: Curve25519.Signing.PrivateKey) -> [UInt8] {
        var header = JSONWriter(capacity: 96)
        header.beginObject()
        header.string("alg", "EdDSA")
        header.string("kid", DeviceKey.thumbprint(key.publicKey))
        header.string("typ", type)
        header.endObject()
        var encoded: [UInt8] = []
        Base64URL.append(header.bytes, to: &encoded)
        return encoded
    }

    /// The token of an encoded header and `payload`, signed with `key`.
    static func compact(encodedHeader: [UInt8], payload: [UInt8], key: Curve25519.Signing.PrivateKey) throws -> String {
        var token: [UInt8] = []
        try append(encodedHeader: encodedHeader, payload: payload, key: key, to: &token)
        return String(decoding: token, as: UTF8.self)
    }

    /// Appends the token to `out`, where its signing input is written and signed in place: a
    /// batch's tokens go into one buffer, never a string each.
    static func append(encodedHeader: [UInt8], payload: [UInt8], key: Curve25519.Signing.PrivateKey, to out: inout [UInt8]) throws {
        let start = out.count
        out.reserveCapacity(start + encodedHeader.count + payload.count * 4 / 3 + 100)
        out.append(contentsOf: encodedHeader)
        out.append(UInt8(ascii: "."))
        Base64URL.append(payload, to: &out)
        let signature = try out.withUnsafeBytes { try key.signature(for: UnsafeRawBufferPointer(rebasing: $0[start...])) }
        out.append(UInt8(ascii: "."))
        signature.withUnsafeBytes { Base64URL.append(Array($0), to: &out) }
    }
}

/// What signs the tokens a `jwt` endpoint receives: the device key, the claims settings give,
/// and the clock that dates each token when it is sent (so a spooled record never leaves
/// already expired).
package struct TokenSigner: Sendable, Equatable {
    package var key: DeviceKey
    /// The device id (`iss`).
    package var issuer: String
    /// `signing.audience`; `nil` to name the endpoint (`Endpoint.signing(as:)`).
    package var audience: String?
    package var lifetimeMilliseconds: Int64
    package var clock: any WallClock
    /// The tokens' header, encoded once.
    private let header: [UInt8]

    package init(key: DeviceKey, issuer: String, audience: String?, lifetimeMilliseconds: Int64, clock: any WallClock) {
        self.header = JWS.header(type: "JWT", key: key.privateKey)
        self.key = key
        self.issuer = issuer
        self.audience = audience
        self.lifetimeMilliseconds = lifetimeMilliseconds
        self.clock = clock
    }

    /// The signer of this install: its key (`DeviceKey.path`) and device id, `signing.*`.
    /// - Throws: `GeolocateError.missingSetting` (78) naming the key file when there is no
    ///   usable key; `.stateNotWritable` when the device id cannot be stored.
    package init(_ context: CommandContext) throws {
        let settings = context.settings
        self.init(key: try DeviceKey.load(from: DeviceKey.path(settings: settings, environment: context.environment,
                                                              stateDirectory: context.stateDirectory)),
                  issuer: try DeviceInfo.deviceID(stateDirectory: context.stateDirectory), audience: settings[ConfigKey.signingAudience],
                  lifetimeMilliseconds: settings[ConfigKey.signingTokenLifetime], clock: context.clock)
    }

    /// `record`'s token, dated now; `nonce` is the server's challenge when it gave one (none for
    /// a spooled record).
    /// - Throws: `GeolocateError.missingSetting` (78) when the key cannot sign.
    package func token(for record: Record, policy: OutputPolicy, nonce: String? = nil) throws -> String {
        var out: [UInt8] = []
        try append(record, policy: policy, nonce: nonce, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `record`'s token, dated now, to `out`.
    private func append(_ record: Record, policy: OutputPolicy, nonce: String?, to out: inout [UInt8]) throws {
        let token = LocationToken(issuer: issuer, audience: audience ?? "", nonce: nonce, issuedAt: clock.nowMilliseconds / 1000,
                                  lifetimeMilliseconds: lifetimeMilliseconds)
        do {
            try token.append(record, policy: policy, key: key.privateKey, header: header, to: &out)
        } catch {
            throw GeolocateError.missingSetting("the device key (kid \(key.keyID)) could not sign: \(ErrorText.plain(error))")
        }
    }

    /// The tokens of `records`, in order, one per line, signed on every core: a signature
    /// costs more than rendering and sending its record, so a `jwt` batch is bound by it.
    /// - Throws: the first record's error, as `token(for:policy:)` does.
    package func lines(for records: [Record], policy: OutputPolicy) throws -> [UInt8] {
        @Sendable func lines(_ slice: ArraySlice<Record>) throws -> [UInt8] {
            var out: [UInt8] = []
            out.reserveCapacity(1600 * slice.count)
            for record in slice {
                try append(record, policy: policy, nonce: nil, to: &out)
                out.append(UInt8(ascii: "\n"))
            }
            return out
        }
        let cores = max(1, min(ProcessInfo.processInfo.activeProcessorCount, records.count / 32))
        guard cores > 1 else { return try lines(records[...]) }
        let size = (records.count + cores - 1) / cores
        let parts = Mutex<[Int: Result<[UInt8], any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: cores) { part in
            let signed = Result { try lines(records[min(part * size, records.count)..<min((part + 1) * size, records.count)]) }
            parts.withLock { $0[part] = signed }
        }
        return try parts.withLock { parts in try (0..<cores).flatMap { try parts[$0]?.get() ?? [] } }
    }

    package static func == (lhs: TokenSigner, rhs: TokenSigner) -> Bool {
        lhs.key.keyID == rhs.key.keyID && lhs.issuer == rhs.issuer && lhs.audience == rhs.audience
            && lhs.lifetimeMilliseconds == rhs.lifetimeMilliseconds
    }
}
