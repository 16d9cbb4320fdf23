import GeolocateModel

/// The core's way to a TPM (`TPMAccess`) through `TPMKey`, each call bounded in time: the
/// command line hands one to the core, which never imports this target.
package struct TSS2TPM: TPMAccess {
    /// The clock the calls' deadlines run on.
    package var elapsed: MonotonicClock
    /// How long making a key may take: a CreatePrimary and a Create take about a second on
    /// slow chips.
    package var makeKeyMilliseconds: Int64 = 30_000
    /// How long one signature may take (tens of milliseconds on real chips): a TPM that does not
    /// answer within it is said to, and the gate's own time bound holds in any case.
    package var signMilliseconds: Int64 = 5_000
    /// How long an attestation or a credential activation may take: the first attestation
    /// makes the attestation key, and each one re-creates the endorsement key (a
    /// CreatePrimary, seconds on slow chips), so as long as making a key.
    package var attestMilliseconds: Int64 = 30_000

    package init(elapsed: MonotonicClock) {
        self.elapsed = elapsed
    }

    package func makeKey(tcti: String, handle: UInt32, replacing: Bool) throws -> (key: TPMKeyReference, x: [UInt8], y: [UInt8]) {
        let (key, point) = try TPMKey.create(tcti: tcti, handle: handle, replacing: replacing,
                                             deadline: Deadline(milliseconds: makeKeyMilliseconds, clock: elapsed))
        return (TPMKeyReference(tcti: tcti, handle: handle, authorization: key.authorization), point.x, point.y)
    }

    package func sign(_ message: UnsafeRawBufferPointer, with key: TPMKeyReference) throws -> [UInt8] {
        try saidWhenCleared { try TPMKey(key).sign(message, deadline: Deadline(milliseconds: signMilliseconds, clock: elapsed)) }
    }

    /// `work`, with what helps added when the TPM no longer holds the key: the key file
    /// outlived it, as a TPM2_Clear (a firmware reset, a reinstall) removes every persistent
    /// key, and only a new key and a new enrolment help.
    private func saidWhenCleared<Value>(_ work: () throws -> Value) throws -> Value {
        do {
            return try work()
        } catch let error as GeolocateError where error.description.contains("holds no key at") {
            throw GeolocateError.missingSetting(error.description
                + "; a TPM clear removes its keys: make a new one with geolocate key init --force-new, and enrol it again")
        }
    }

    package func remove(_ key: TPMKeyReference) throws {
        try TPMKey(key).evict(deadline: Deadline(milliseconds: signMilliseconds, clock: elapsed))
    }

    package func attest(_ key: TPMKeyReference, nonce: [UInt8]) throws -> TPMAttestation {
        try saidWhenCleared { try TPMKey(key).attest(nonce: nonce, deadline: Deadline(milliseconds: attestMilliseconds, clock: elapsed)) }
    }

    package func activate(_ key: TPMKeyReference, credentialBlob: [UInt8], encryptedSecret: [UInt8]) throws -> [UInt8] {
        try TPMKey(key).activate(credentialBlob: credentialBlob, encryptedSecret: encryptedSecret,
                                 deadline: Deadline(milliseconds: attestMilliseconds, clock: elapsed))
    }
}

extension TPMKey {
    /// The key `reference` names.
    package init(_ reference: TPMKeyReference) {
        self.init(tcti: reference.tcti, handle: reference.handle, authorization: reference.authorization)
    }
}
