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
}
