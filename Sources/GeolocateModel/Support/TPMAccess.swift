/// Where a new device key is made (`signing.keyProvider`): a key file, or a TPM 2.0 that
/// never lets the private key out (SPEC §15, "A key no one can copy").
package enum KeyProvider: String, Sendable, CaseIterable {
    case file
    case tpm
}

/// A signing key inside a TPM, as geolocate keeps it: which TPM (its TCTI), where in it (a
/// persistent handle) and the authorisation value that lets it sign.
package struct TPMKeyReference: Sendable, Equatable {
    /// The TCTI configuration, as `Tss2_TctiLdr_Initialize` takes it (`signing.tpm`).
    package var tcti: String
    /// The persistent handle, 0x81000000–0x81FFFFFF.
    package var handle: UInt32
    /// Whoever has it may ask the TPM to sign, so it is kept as a key file is: readable by
    /// the signing users alone.
    package var authorization: [UInt8]

    package init(tcti: String, handle: UInt32, authorization: [UInt8]) {
        self.tcti = tcti
        self.handle = handle
        self.authorization = authorization
    }

    /// The handle as TPM tools print it, `0x81000010`.
    package var handleText: String { "0x" + String(handle, radix: 16) }
}

/// What the core asks of a TPM: the seam between the key file and tokens (GeolocateDelivery)
/// and the adapter that speaks TSS2 (target TPM), which the command line hands in, as it
/// hands in the MQTT transport.
package protocol TPMAccess: Sendable {
    /// Makes a P-256 signing key at `handle` (an existing key there is replaced only with
    /// `replacing`) and returns it with its public point, `x` and `y` 32 bytes each.
    /// - Throws: `GeolocateError.missingSetting` (78) when the TPM cannot be reached, refuses
    ///   or does not answer in time.
    func makeKey(tcti: String, handle: UInt32, replacing: Bool) throws -> (key: TPMKeyReference, x: [UInt8], y: [UInt8])

    /// The ES256 signature of `message` (SHA-256, then ECDSA inside the TPM): r‖s, 32 bytes each.
    /// - Throws: as `makeKey`.
    func sign(_ message: UnsafeRawBufferPointer, with key: TPMKeyReference) throws -> [UInt8]

    /// Removes the key at `key.handle` from the TPM.
    /// - Throws: as `makeKey`.
    func remove(_ key: TPMKeyReference) throws

    /// The TPM's evidence that `key` lives in it, for `nonce` (1–64 bytes, a server's), signed
    /// by the TPM's attestation key (made under its endorsement key the first time).
    /// - Throws: as `makeKey`, and when the TPM has no endorsement key certificate.
    func attest(_ key: TPMKeyReference, nonce: [UInt8]) throws -> TPMAttestation

    /// The secret a server sealed to this TPM's endorsement key and attestation key
    /// (TPM2_MakeCredential), which only this TPM can open: the answer that enrols the
    /// attestation key. `credentialBlob` and `encryptedSecret` are without size prefixes.
    /// - Throws: as `makeKey`, and when the credential was made for another TPM or key.
    func activate(_ key: TPMKeyReference, credentialBlob: [UInt8], encryptedSecret: [UInt8]) throws -> [UInt8]
}

/// Evidence that a signing key lives in a TPM, for a server to check (Examples/verify): the
/// TPM's TPM2_Certify of the key by an attestation key, and the endorsement key's public area
/// and certificate, each in the TPM's own marshalled form (TPM 2.0 Part 2).
package struct TPMAttestation: Sendable, Equatable {
    /// The TPMS_ATTEST the attestation key signed: the certified key's Name, the nonce.
    package var certInfo: [UInt8]
    /// The attestation key's signature of `certInfo`, a TPMT_SIGNATURE.
    package var signature: [UInt8]
    /// The certified key's TPMT_PUBLIC (its attributes, its point).
    package var pubArea: [UInt8]
    /// The attestation key's TPMT_PUBLIC.
    package var akPublic: [UInt8]
    /// The endorsement key's TPMT_PUBLIC, which the certificate names.
    package var ekPublic: [UInt8]
    /// The endorsement key's certificate, DER, as the TPM's NV holds it.
    package var ekCertificate: [UInt8]

    package init(certInfo: [UInt8], signature: [UInt8], pubArea: [UInt8], akPublic: [UInt8], ekPublic: [UInt8], ekCertificate: [UInt8]) {
        self.certInfo = certInfo
        self.signature = signature
        self.pubArea = pubArea
        self.akPublic = akPublic
        self.ekPublic = ekPublic
        self.ekCertificate = ekCertificate
    }

    /// One JSON object of unpadded base64url strings: `akPub`, `certInfo`, `ekCert`, `ekPub`,
    /// `pubArea`, `sig`, in that order.
    package var json: String {
        var json = JSONWriter(capacity: 4096)
        json.beginObject()
        json.string("akPub", Base64URL.encode(akPublic))
        json.string("certInfo", Base64URL.encode(certInfo))
        json.string("ekCert", Base64URL.encode(ekCertificate))
        json.string("ekPub", Base64URL.encode(ekPublic))
        json.string("pubArea", Base64URL.encode(pubArea))
        json.string("sig", Base64URL.encode(signature))
        json.endObject()
        return json.text
    }
}
