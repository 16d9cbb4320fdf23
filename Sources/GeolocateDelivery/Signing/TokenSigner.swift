import Crypto
import Foundation
import GeolocateConfig
import GeolocateModel
import Synchronization

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
        self.header = JWS.header(type: "JWT", key: key.signing)
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
        self.init(key: try DeviceKey.load(in: context),
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
            try token.append(record, policy: policy, key: key.signing, header: header, to: &out)
        } catch let error as GeolocateError {
            throw error
        } catch {
            throw GeolocateError.missingSetting("the device key (kid \(key.keyID)) could not sign: \(ErrorText.plain(error))")
        }
    }

    /// The tokens of `records`, in order, one per line, signed on every core: a signature
    /// costs more than rendering and sending its record, so a `jwt` batch is bound by it. A
    /// TPM signs one at a time, so its tokens are signed in turn.
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
        let inProcess = if case .ed25519 = key.signing { true } else { false }
        let cores = inProcess ? max(1, min(ProcessInfo.processInfo.activeProcessorCount, records.count / 32)) : 1
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
