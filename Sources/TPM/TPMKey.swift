import CTPM
import Crypto
import Dispatch
import Foundation
import GeolocateModel
import Synchronization

/// A P-256 signing key made inside a TPM 2.0 and kept at one of its persistent handles
/// (SPEC §15, "A key no one can copy"): the private key never leaves the TPM; what geolocate
/// keeps is where the key is and the authorisation value that lets it sign.
///
/// Every call talks to the TPM through the TCTI it names (`device:/dev/tpmrm0`, the kernel's
/// resource manager; `swtpm:host=127.0.0.1,port=2321`), on a thread of its own, and waits at
/// most until its deadline: a TPM that never answers costs the caller's time bound, no more.
/// This is the one Swift file that imports CTPM (the ESAPI calls, in C); no C type leaves it.
package struct TPMKey: Sendable {
    /// The TCTI configuration, as `Tss2_TctiLdr_Initialize` takes it.
    package let tcti: String
    /// The persistent handle, 0x81000000–0x81FFFFFF.
    package let handle: UInt32
    /// The key's authorisation value (at most 32 bytes): whoever has it may ask the TPM to
    /// sign, so it is kept as the key file is, readable by the signing users alone.
    package let authorization: [UInt8]

    /// The persistent handles a key may sit at (TPM 2.0 Part 2, `TPM_HT_PERSISTENT`).
    package static let persistentHandles: ClosedRange<UInt32> = 0x8100_0000...0x81FF_FFFF

    package init(tcti: String, handle: UInt32, authorization: [UInt8]) {
        self.tcti = tcti
        self.handle = handle
        self.authorization = authorization
    }

    /// A public point on P-256: `x` and `y`, 32 bytes each, big-endian.
    package struct PublicPoint: Sendable, Equatable {
        package var x: [UInt8]
        package var y: [UInt8]
    }

    /// Makes a new key in the TPM at `handle`, with a fresh random authorisation value;
    /// an existing key there is replaced only with `replacing`.
    /// - Throws: `GeolocateError.missingSetting` (78) when the TPM cannot be reached, refuses,
    ///   or does not answer before `deadline`.
    package static func create(tcti: String, handle: UInt32, replacing: Bool, deadline: Deadline) throws -> (key: TPMKey, publicPoint: PublicPoint) {
        let key = TPMKey(tcti: tcti, handle: handle, authorization: Array(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }))
        let point = try key.call("make a key", deadline: deadline) { error in
            var x = [UInt8](repeating: 0, count: 32), y = [UInt8](repeating: 0, count: 32)
            let status = geolocate_tpm_create(tcti, handle, key.authorization, key.authorization.count, replacing ? 1 : 0, &x, &y, error)
            return status == 0 ? PublicPoint(x: x, y: y) : nil
        }
        return (key, point)
    }

    /// The key's public point, read from the TPM, which also checks that the key at the handle
    /// is a P-256 signing key made inside it.
    package func publicPoint(deadline: Deadline) throws -> PublicPoint {
        try call("read the key", deadline: deadline) { error in
            var x = [UInt8](repeating: 0, count: 32), y = [UInt8](repeating: 0, count: 32)
            return geolocate_tpm_public(tcti, handle, &x, &y, error) == 0 ? PublicPoint(x: x, y: y) : nil
        }
    }

    /// The ES256 signature of `message` (SHA-256, then ECDSA in the TPM): `r` and `s`, 32
    /// bytes each, as JOSE writes them (RFC 7518 §3.4).
    package func sign<Message: DataProtocol>(_ message: Message, deadline: Deadline) throws -> [UInt8] {
        let digest = Array(SHA256.hash(data: message))
        return try call("sign", deadline: deadline) { error in
            var r = [UInt8](repeating: 0, count: 32), s = [UInt8](repeating: 0, count: 32)
            let status = geolocate_tpm_sign(tcti, handle, authorization, authorization.count, digest, &r, &s, error)
            return status == 0 ? r + s : nil
        }
    }

    /// Removes the key from the TPM's persistent memory.
    package func evict(deadline: Deadline) throws {
        _ = try call("remove the key", deadline: deadline) { error in
            geolocate_tpm_evict(tcti, handle, error) == 0 ? true : nil
        }
    }

    /// Runs `work` on a thread of its own and waits for it until `deadline`: the TSS libraries
    /// block on the TPM, which may never answer. `work` returns `nil` after filling in the error.
    private func call<Value: Sendable>(_ what: String, deadline: Deadline,
                                       _ work: @escaping @Sendable (UnsafeMutablePointer<geolocate_tpm_error>) -> Value?) throws -> Value {
        try Self.refuseNonTPMDevice(tcti)
        let outcome = Mutex<Result<Value, GeolocateError>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        let name = "TPM \(handleText) at \(tcti)"
        let thread = Thread {
            var error = geolocate_tpm_error()
            let value = work(&error)
            let message = withUnsafeBytes(of: error.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            outcome.withLock { $0 = value.map { .success($0) } ?? .failure(.missingSetting("\(name): \(message)")) }
            finished.signal()
        }
        thread.start()
        guard deadline.wait(for: finished), let result = outcome.withLock({ $0 }) else {
            // The thread stays blocked in the TSS libraries; it holds nothing of the caller's.
            throw GeolocateError.missingSetting("\(name) did not answer in time to \(what) (is the TPM there, and its TCTI right?)")
        }
        return try result.get()
    }

    /// The handle as TPM tools print it, `0x81010010`.
    package var handleText: String { "0x" + String(handle, radix: 16) }

    /// Refuses a `device:` TCTI whose path is not a TPM's character device (the kernel's
    /// `tpm` or `tpmrm` class, as sysfs names it): the device TCTI writes TPM commands to
    /// whatever it opens, so `device:/dev/sda`, or a key file, would be written over.
    /// - Throws: `GeolocateError.missingSetting` (78) naming the path.
    static func refuseNonTPMDevice(_ tcti: String) throws {
        guard tcti.hasPrefix("device:") || tcti == "device" else { return }
        let configured = String(tcti.dropFirst("device:".count))
        let path = configured.isEmpty ? "/dev/tpm0" : configured
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw GeolocateError.missingSetting("cannot open the TPM at \(tcti): \(path): \(String(cString: strerror(errno)).lowercased())")
        }
        let major = (status.st_rdev >> 8) & 0xFFF | (status.st_rdev >> 32) & ~0xFFF
        let minor = status.st_rdev & 0xFF | (status.st_rdev >> 12) & ~0xFF
        let node = "/sys/dev/char/\(major):\(minor)"
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: node)) ?? ""
        let parts = target.split(separator: "/")
        guard status.st_mode & S_IFMT == S_IFCHR, parts.count >= 2, ["tpm", "tpmrm"].contains(parts[parts.count - 2]) else {
            throw GeolocateError.missingSetting("cannot open the TPM at \(tcti): \(path) is not a TPM device (the kernel's /dev/tpmrm0 "
                + "or /dev/tpm0); signing.tpm names the TPM, never another file, and nothing was written to it")
        }
    }
}

// MARK: - Attestation (SPEC §15, `key attest`)

extension TPMKey {
    /// Where the attestation key sits, whichever handle the signing key is at: a rotation
    /// moves the signing key between 0x81000010 and 0x81000012, and the attestation key stays,
    /// so a server enrols it once.
    package static let attestationKeyHandle: UInt32 = 0x8100_0011

    /// `TPMKey.attestationKeyHandle`.
    package var attestationKeyHandle: UInt32 { Self.attestationKeyHandle }

    /// The TPM's evidence that this key lives in it, for `nonce` (at most 64 bytes, the
    /// server's, so the evidence is fresh). The attestation key is made under the endorsement
    /// key and persisted at `attestationKeyHandle` the first time, and reused afterwards, so a
    /// server enrols it once (`activate`).
    /// - Throws: `GeolocateError.missingSetting` (78) when the TPM cannot be reached, refuses,
    ///   has no endorsement key certificate, or does not answer before `deadline`.
    package func attest(nonce: [UInt8], deadline: Deadline) throws -> TPMAttestation {
        let akHandle = attestationKeyHandle
        return try call("attest the key", deadline: deadline) { error in
            // Each marshalled structure fits in 1 KiB (an RSA-4096 public area is 0.6 KiB);
            // EK certificates are 1–2 KiB.
            let buffers = [1024, 1024, 1024, 1024, 1024, 4096].map { UnsafeMutableBufferPointer<UInt8>.allocate(capacity: $0) }
            defer { buffers.forEach { $0.deallocate() } }
            func buffer(_ index: Int) -> geolocate_tpm_buffer {
                geolocate_tpm_buffer(bytes: buffers[index].baseAddress, capacity: buffers[index].count, length: 0)
            }
            var out = geolocate_tpm_attestation(cert_info: buffer(0), signature: buffer(1), public_area: buffer(2), ak_public: buffer(3),
                                                ek_public: buffer(4), ek_certificate: buffer(5))
            guard geolocate_tpm_attest(tcti, handle, authorization, authorization.count, akHandle, nonce, nonce.count, &out, error) == 0 else {
                return nil
            }
            func bytes(_ buffer: geolocate_tpm_buffer) -> [UInt8] { Array(UnsafeBufferPointer(start: buffer.bytes, count: buffer.length)) }
            return TPMAttestation(certInfo: bytes(out.cert_info), signature: bytes(out.signature), pubArea: bytes(out.public_area),
                                  akPublic: bytes(out.ak_public), ekPublic: bytes(out.ek_public), ekCertificate: bytes(out.ek_certificate))
        }
    }

    /// The answer to a server's credential challenge (TPM2_ActivateCredential): the secret it
    /// sealed to this TPM's endorsement key and attestation key with TPM2_MakeCredential.
    /// `credentialBlob` is a TPM2B_ID_OBJECT's contents, `encryptedSecret` a
    /// TPM2B_ENCRYPTED_SECRET's, each without its size prefix.
    /// - Throws: `GeolocateError.missingSetting` (78) when the TPM cannot be reached, holds no
    ///   attestation key, cannot open the credential (made for another TPM or key), or does not
    ///   answer before `deadline`.
    package func activate(credentialBlob: [UInt8], encryptedSecret: [UInt8], deadline: Deadline) throws -> [UInt8] {
        let akHandle = attestationKeyHandle
        return try call("answer the credential challenge", deadline: deadline) { error in
            var secret = [UInt8](repeating: 0, count: 32)
            var length = 0
            let status = geolocate_tpm_activate(tcti, akHandle, credentialBlob, credentialBlob.count, encryptedSecret, encryptedSecret.count,
                                                &secret, &length, error)
            return status == 0 ? Array(secret.prefix(length)) : nil
        }
    }
}
