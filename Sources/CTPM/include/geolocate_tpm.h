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

#endif
