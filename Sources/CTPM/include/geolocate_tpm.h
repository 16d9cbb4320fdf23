// The TPM 2.0 work geolocate does, through the TSS2 ESAPI (Debian libtss2-dev): a P-256
// signing key made inside the TPM and kept at a persistent handle, its public point, and
// ECDSA signatures with it. For TPMKey.swift alone, the only Swift file that imports CTPM.
//
// Each call opens the TCTI it is given (`device:/dev/tpmrm0`, `swtpm:host=…,port=…`), does
// its work and closes it: no state lives between calls. A call may block as long as the
// TPM takes; the Swift side bounds it.
#ifndef GEOLOCATE_TPM_H
#define GEOLOCATE_TPM_H

#include <stddef.h>
#include <stdint.h>

/// Why a call failed: a line for the user, and the TPM's response code (0 when the failure
/// was not the TPM's, such as a TCTI that cannot be loaded).
typedef struct {
    char message[256];
    uint32_t code;
} geolocate_tpm_error;

/// The response code of a TPM refusing an authorisation value (TPM_RC_AUTH_FAIL or
/// TPM_RC_BAD_AUTH, with or without a session or handle number in it).
int geolocate_tpm_is_auth_failure(uint32_t code);
/// The response code of a TPM in dictionary-attack lockout (TPM_RC_LOCKOUT).
int geolocate_tpm_is_lockout(uint32_t code);

/// Makes a P-256 ECDSA/SHA-256 signing key (fixedTPM, fixedParent, sensitiveDataOrigin,
/// userWithAuth with `auth`) under a storage key made for the occasion, and persists it at
/// `handle` (a persistent handle, 0x81000000–0x81FFFFFF). An object already at `handle` is
/// evicted first when `replace` is set, else the call fails. `x` and `y` get the public point.
/// Returns 0, or -1 with `error` filled in.
int geolocate_tpm_create(const char *tcti, uint32_t handle, const uint8_t *auth, size_t auth_length, int replace,
                         uint8_t x[32], uint8_t y[32], geolocate_tpm_error *error);

/// The public point of the key at `handle`, and whether it is a P-256 ECDSA signing key made
/// inside this TPM (fixedTPM, fixedParent, sensitiveDataOrigin): 0, or -1 with `error`.
int geolocate_tpm_public(const char *tcti, uint32_t handle, uint8_t x[32], uint8_t y[32], geolocate_tpm_error *error);

/// Signs a SHA-256 `digest` with the key at `handle`, authorised by `auth`: `r` and `s`, each
/// left-padded to 32 bytes (JOSE's ES256 form, RFC 7518 §3.4). Returns 0, or -1 with `error`.
int geolocate_tpm_sign(const char *tcti, uint32_t handle, const uint8_t *auth, size_t auth_length, const uint8_t digest[32],
                       uint8_t r[32], uint8_t s[32], geolocate_tpm_error *error);

/// Evicts the key at `handle` from the TPM's persistent memory: 0, or -1 with `error`.
int geolocate_tpm_evict(const char *tcti, uint32_t handle, geolocate_tpm_error *error);

/// A byte buffer the caller owns: `capacity` bytes at `bytes`; a call sets `length`.
typedef struct {
    uint8_t *bytes;
    size_t capacity;
    size_t length;
} geolocate_tpm_buffer;

/// What `geolocate_tpm_attest` returns, each in the TPM's own marshalled form (TPM 2.0 Part 2).
typedef struct {
    /// The TPMS_ATTEST the attestation key signed (TPM2B_ATTEST's contents).
    geolocate_tpm_buffer cert_info;
    /// The attestation key's signature of `cert_info`, a marshalled TPMT_SIGNATURE.
    geolocate_tpm_buffer signature;
    /// The certified signing key's TPMT_PUBLIC: its Name is 0x000b ‖ SHA-256 of these bytes.
    geolocate_tpm_buffer public_area;
    /// The attestation key's TPMT_PUBLIC.
    geolocate_tpm_buffer ak_public;
    /// The endorsement key's TPMT_PUBLIC (RSA-2048, the TCG template L-1).
    geolocate_tpm_buffer ek_public;
    /// The endorsement key's certificate (DER, as the TPM's NV holds it, padding and all).
    geolocate_tpm_buffer ek_certificate;
} geolocate_tpm_attestation;

/// The NV index of the RSA-2048 endorsement key's certificate (TCG EK Credential Profile).
#define GEOLOCATE_TPM_EK_CERTIFICATE_INDEX 0x01c00002u

/// Evidence that the key at `handle` lives in this TPM: TPM2_Certify of it (authorised by
/// `auth`) by the attestation key at `ak_handle`, with `nonce` (at most 64 bytes) as the
/// qualifying data, and the endorsement key's public area and certificate. The attestation
/// key (a restricted P-256 ECDSA signing key, fixedTPM, made under the endorsement key) is
/// made and persisted at `ak_handle` the first time, and reused afterwards. Each buffer of
/// `out` must hold what it gets (1 KiB each, 4 KiB for the certificate, are enough).
/// Returns 0, or -1 with `error` filled in.
int geolocate_tpm_attest(const char *tcti, uint32_t handle, const uint8_t *auth, size_t auth_length, uint32_t ak_handle,
                         const uint8_t *nonce, size_t nonce_length, geolocate_tpm_attestation *out, geolocate_tpm_error *error);

/// TPM2_ActivateCredential: the secret (at most 32 bytes, into `secret`, its length into
/// `secret_length`) a verifier sealed with TPM2_MakeCredential to the attestation key at
/// `ak_handle` and this TPM's endorsement key. `credential_blob` is a TPM2B_ID_OBJECT's
/// contents (the integrity HMAC as a TPM2B, then the encrypted identity) and
/// `encrypted_secret` a TPM2B_ENCRYPTED_SECRET's (the seed, RSA-OAEP encrypted to the EK),
/// both without their own size prefix. Returns 0, or -1 with `error` filled in.
int geolocate_tpm_activate(const char *tcti, uint32_t ak_handle, const uint8_t *credential_blob, size_t credential_blob_length,
                           const uint8_t *encrypted_secret, size_t encrypted_secret_length, uint8_t secret[32],
                           size_t *secret_length, geolocate_tpm_error *error);

#endif
