import Crypto
import Foundation
import GeolocateConfig
import GeolocateModel
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `key init`, `key show`, `key rotate` and `key attest`: the device key of the context's configuration and
/// state directory, each returning what the command prints and saying the rest on the logger.
extension DeviceKey {
    /// Where the key is for `context` (`signing.keyFile`, else the state directory's, else
    /// system mode's).
    package static func path(in context: CommandContext) -> String {
        path(settings: context.settings, environment: context.environment, stateDirectory: context.stateDirectory)
    }

    /// The key of `context`, ready to sign: a key in a TPM signs through the context's TPM at
    /// `signing.tpm`.
    /// - Throws: as `load(from:)`.
    package static func load(in context: CommandContext) throws -> DeviceKey {
        try load(from: path(in: context), tcti: context.settings[ConfigKey.signingTPM], tpm: context.tpm)
    }

    /// The persistent handles a TPM key sits at: a rotation makes the new key at the one the
    /// old key does not use, so the old key can still sign the statement for the new one. The
    /// attestation key (`key attest`) sits between them, at 0x81000011.
    package static let tpmHandles: [UInt32] = [0x8100_0010, 0x8100_0012]

    /// A new signing key where `signing.keyProvider` says: in this process, or in the TPM at
    /// `handle` (a key there replaced only when `replacing`).
    private static func makeSigningKey(in context: CommandContext, handle: UInt32, replacing: Bool) throws -> SigningKey {
        switch context.settings[ConfigKey.signingKeyProvider] {
        case .file:
            return .ed25519(.init())
        case .tpm:
            let tcti = context.settings[ConfigKey.signingTPM]
            guard let tpm = context.tpm else {
                throw GeolocateError.missingSetting("signing.keyProvider is tpm, but this command cannot reach a TPM")
            }
            let made: (key: TPMKeyReference, x: [UInt8], y: [UInt8])
            do { made = try tpm.makeKey(tcti: tcti, handle: handle, replacing: replacing) } catch let error as GeolocateError
                where !replacing && error.description.contains("already holds a key") {
                // No key file names it: a file lost, or another program's key.
                throw GeolocateError.missingSetting(error.description
                    + " that no key file names (a lost key file, or another program's key); geolocate key init --force-new replaces it")
            }
            let point = Data([0x04] + made.x + made.y)
            let publicKey: P256.Signing.PublicKey
            do { publicKey = try P256.Signing.PublicKey(x963Representation: point) } catch {
                throw GeolocateError.missingSetting("the TPM at \(tcti) made a key whose public point is not on P-256")
            }
            return .tpm(made.key, publicKey, tpm)
        }
    }

    /// Removes `key` from its TPM when it is a TPM key, saying on the logger when that fails:
    /// a key left in the TPM signs nothing of ours, it only takes a handle.
    private static func removeFromTPM(_ key: SigningKey, _ why: String, logger: Logger) {
        guard case .tpm(let reference, _, let tpm?) = key else { return }
        do { try tpm.remove(reference) } catch {
            logger.warning("\(why) could not be removed from the TPM (\(reference.handleText)): \(ErrorText.plain(error))")
        }
    }

    /// `key init`: makes the key (an existing one is kept unless `replacing`), writes the JWK
    /// Set a server enrols to `write`, then says on the logger what it made (after, so that a
    /// failed write is the one line said).
    /// - Throws: `GeolocateError` when a key exists and `replacing` is false, or it cannot be
    ///   written; what `write` throws.
    package static func initialize(in context: CommandContext, replacing: Bool, write: (String) throws -> Void) throws {
        let path = path(in: context)
        let issuer = try DeviceInfo.deviceID(stateDirectory: context.stateDirectory)
        let key = try changing(path) {
            // Asked before a TPM makes anything: a kept key, or a path no key may be written to
            // (a link, another user's file), leaves the TPM as it is.
            var info = stat()
            if !replacing, lstat(path, &info) == 0 { throw alreadyExists(path) }
            try refuseUnreplaceable(at: path)
            let old = replacing ? try? load(in: context) : nil
            // A key in the TPM that the file names stays until the new one is kept: the new
            // key goes to the other handle, as a rotation's does.
            let handle = if case .tpm(let reference, _, _)? = old?.signing, reference.handle == tpmHandles[0] { tpmHandles[1] } else { tpmHandles[0] }
            let key = DeviceKey(try makeSigningKey(in: context, handle: handle, replacing: replacing))
            do { try key.save(to: path, replacing: replacing) } catch {
                removeFromTPM(key.signing, "the key just made", logger: context.logger)
                throw error
            }
            if let old, case .tpm(let reference, _, _) = old.signing, reference.handle != handle {
                removeFromTPM(old.signing, "the replaced key", logger: context.logger)
            }
            return key
        }
        try write(key.jwkSet(issuer: issuer))
        context.logger.notice("made the device key \(path) (kid \(key.keyID)\(key.placeText))")
    }

    /// `key show`: the device id and the signing key (retired ones too with `all`) as one
    /// JSON object, or with `pem` the public keys as PEM.
    package static func show(in context: CommandContext, pem: Bool, all: Bool) throws -> String {
        let key = try load(in: context)
        if pem { return key.publicPEM(includingRetired: all) }
        return key.jwkSet(issuer: try DeviceInfo.deviceID(stateDirectory: context.stateDirectory), includingRetired: all) + "\n"
    }

    /// `key rotate`: a new key, and the statement the old key signs for it (a JWS) written to
    /// `write`, then the note on the logger.
    ///
    /// Read, signed and written under the key's lock: a rotation at the same time waits, then
    /// rotates the key this one made. The statement is written before the new key is kept: a
    /// stdout that fails leaves the old key in place, where the statement would otherwise be
    /// lost with the key changed (a hostile pass); a key that then cannot be kept is an error,
    /// and the old key stays.
    package static func rotate(in context: CommandContext, write: (String) throws -> Void) throws {
        let path = path(in: context)
        let issuer = try DeviceInfo.deviceID(stateDirectory: context.stateDirectory)
        let logger = context.logger
        let (old, new) = try changing(path) {
            let old = try load(in: context)
            let handle = if case .tpm(let reference, _, _) = old.signing, reference.handle == tpmHandles[0] { tpmHandles[1] } else { tpmHandles[0] }
            let (new, forgotten) = old.rotated(to: try makeSigningKey(in: context, handle: handle, replacing: true))
            do {
                let statement = try KeyRotation(old: old, new: new, issuer: issuer, issuedAt: context.clock.nowMilliseconds / 1000).compact()
                try write(statement)
                try new.save(to: path, replacing: true)
            } catch {
                removeFromTPM(new.signing, "the new key", logger: logger)
                throw error
            }
            removeFromTPM(old.signing, "the old key", logger: logger)
            if forgotten > 0 {
                logger.warning("the oldest retired key is no longer listed: a key file keeps \(maximumRetired) retired keys")
            }
            return (old, new)
        }
        logger.notice("the device key \(path) is new (kid \(new.keyID)\(new.placeText)); the old one (kid \(old.keyID)) signs no more (key show --all lists it)")
    }

    /// The most bytes a nonce for `key attest` may have: TPM2_Certify's `qualifyingData` is a
    /// digest-sized buffer, and 64 bytes is what a TPM with SHA-512 takes (most take 64).
    package static let maximumAttestNonceBytes = 64

    /// `key attest --nonce`: the TPM's evidence that the signing key lives in it, for the
    /// server's `nonce` (its UTF-8 bytes), as one JSON object and a newline.
    /// - Throws: `GeolocateError.usage` (64) for an empty or longer nonce;
    ///   `GeolocateError.missingSetting` (78) when the key is not in a TPM, or the TPM cannot
    ///   attest it (no EK certificate, unreachable, refusing, silent).
    package static func attest(in context: CommandContext, nonce: String) throws -> String {
        let bytes = Array(nonce.utf8)
        guard (1...maximumAttestNonceBytes).contains(bytes.count) else {
            throw GeolocateError.usage("--nonce takes 1 to \(maximumAttestNonceBytes) bytes (this one has \(bytes.count))")
        }
        let (key, reference, tpm) = try tpmKey(in: context)
        // One signature first, checked against the key file's public key: evidence for a key
        // the file does not name would vouch for a kid the device never signs with.
        _ = try Array("geolocate key attest".utf8).withUnsafeBytes { try key.signing.signature(for: $0) }
        return try tpm.attest(reference, nonce: bytes).json + "\n"
    }

    /// `key attest --activate`: the TPM's answer to a server's credential challenge
    /// (`verify.py attest-challenge` prints it: the credential blob and the encrypted secret,
    /// base64url, joined by a dot), the secret as base64url and a newline.
    /// - Throws: `GeolocateError.usage` (64) for a challenge not in that form; as `attest`,
    ///   and when the challenge was made for another TPM or attestation key.
    package static func activate(in context: CommandContext, challenge: String) throws -> String {
        let parts = challenge.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let blob = Base64URL.decode(parts[0]), let secret = Base64URL.decode(parts[1]),
              !blob.isEmpty, !secret.isEmpty, blob.count <= 1024, secret.count <= 1024 else {
            throw GeolocateError.usage("--activate takes the challenge a server's attest-challenge prints: two base64url parts joined by a dot")
        }
        let (_, reference, tpm) = try tpmKey(in: context)
        return Base64URL.encode(try tpm.activate(reference, credentialBlob: blob, encryptedSecret: secret)) + "\n"
    }

    /// The device key, its place in a TPM and the way to it, for `key attest`.
    private static func tpmKey(in context: CommandContext) throws -> (DeviceKey, TPMKeyReference, any TPMAccess) {
        let key = try load(in: context)
        guard case .tpm(let reference, _, let tpm) = key.signing else {
            throw GeolocateError.missingSetting("the device key \(path(in: context)) is in a file, and only a key in a TPM can be attested: "
                + "set signing.keyProvider tpm, then geolocate key rotate")
        }
        guard let tpm else { throw GeolocateError.missingSetting("the device key is in a TPM, but this command cannot reach a TPM") }
        return (key, reference, tpm)
    }

    /// Where the signing key is, when a TPM holds it: `, in the TPM at 0x81000010`.
    private var placeText: String {
        guard case .tpm(let reference, _, _) = signing else { return "" }
        return ", in the TPM at \(reference.tcti), \(reference.handleText)"
    }

    /// The error of `key init` where a key is kept, or where something that is no key is.
    static func alreadyExists(_ path: String) -> GeolocateError {
        var info = stat()
        if lstat(path, &info) == 0, info.st_mode & S_IFMT != S_IFREG {
            let kind = switch info.st_mode & S_IFMT {
            case S_IFLNK: "a symbolic link"
            case S_IFIFO: "a FIFO"
            case S_IFDIR: "a directory"
            default: "a device or socket"
            }
            return .missingSetting("device key \(path) is \(kind), not a key; nothing was written there (remove it, then run geolocate key init again)")
        }
        return .missingSetting("a device key already exists at \(path): geolocate key show prints it; "
            + "geolocate key init --force-new replaces it (a cloned disk image), geolocate key rotate moves to a new one")
    }
}
