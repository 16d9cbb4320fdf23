#include "geolocate_tpm.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

static void fail(geolocate_tpm_error *error, TSS2_RC code, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(error->message, sizeof error->message, format, arguments);
    va_end(arguments);
    error->code = code;
}

/// The TPM's own response code in `code`, or 0 when another layer (the TCTI, ESAPI) answered.
static uint32_t tpm_code(uint32_t code) {
    return (code & TSS2_RC_LAYER_MASK) == TSS2_TPM_RC_LAYER ? code & 0xFFFF : 0;
}

int geolocate_tpm_is_auth_failure(uint32_t code) {
    uint32_t tpm = tpm_code(code);
    // Format-one codes carry the parameter, handle or session number in bits 6 and 8–11.
    uint32_t base = (tpm & TPM2_RC_FMT1) ? (tpm & 0xBF) : tpm;
    return tpm != 0 && (base == TPM2_RC_AUTH_FAIL || base == TPM2_RC_BAD_AUTH);
}

int geolocate_tpm_is_lockout(uint32_t code) {
    return tpm_code(code) == TPM2_RC_LOCKOUT;
}

static pthread_once_t quieted = PTHREAD_ONCE_INIT;

/// The TSS libraries write their own warnings to stderr (a key looked for and not found is an
/// "ERROR" line), which would break geolocate's one line per failure: off, unless the user set
/// TSS2_LOG. The libraries read it at their first message; there is no call to set it.
static void quiet(void) { setenv("TSS2_LOG", "all+NONE", 0); }

/// Opens the TCTI `conf` and an ESAPI context on it.
static int open_tpm(const char *conf, TSS2_TCTI_CONTEXT **tcti, ESYS_CONTEXT **esys, geolocate_tpm_error *error) {
    pthread_once(&quieted, quiet);
    *tcti = NULL;
    *esys = NULL;
    TSS2_RC rc = Tss2_TctiLdr_Initialize(conf, tcti);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "cannot open the TPM at %s (%s)", conf, Tss2_RC_Decode(rc));
        return -1;
    }
    rc = Esys_Initialize(esys, *tcti, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "cannot talk to the TPM at %s (%s)", conf, Tss2_RC_Decode(rc));
        Tss2_TctiLdr_Finalize(tcti);
        return -1;
    }
    return 0;
}

/// `open_tpm` for a call that authorises the key with an authValue of `auth_length` bytes:
/// at most a SHA-256 digest's, the key's name algorithm.
static int open_tpm_for_key(const char *conf, size_t auth_length, TSS2_TCTI_CONTEXT **tcti, ESYS_CONTEXT **esys,
                            geolocate_tpm_error *error) {
    if (auth_length > 32) {
        fail(error, 0, "a TPM key's authorisation value is at most 32 bytes");
        return -1;
    }
    return open_tpm(conf, tcti, esys, error);
}

static void close_tpm(TSS2_TCTI_CONTEXT **tcti, ESYS_CONTEXT **esys) {
    if (*esys) Esys_Finalize(esys);
    if (*tcti) Tss2_TctiLdr_Finalize(tcti);
}

/// `value` (at most 32 bytes, big-endian) as 32 bytes, left-padded with zeros.
static void padded(const TPM2B_ECC_PARAMETER *value, uint8_t out[32]) {
    memset(out, 0, 32);
    size_t size = value->size > 32 ? 32 : value->size;
    memcpy(out + 32 - size, value->buffer + value->size - size, size);
}

/// The attributes every key geolocate signs with has: made inside this TPM, never to leave it.
static const TPMA_OBJECT key_attributes = TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_FIXEDTPM
    | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN;

/// Outside the TPM's dictionary-attack protection: the authorisation value is 32 random bytes,
/// which no one guesses, while with the protection any local user who can reach the TPM could
/// put it in lockout with a few wrong tries, and the gate could then sign no login.
static const TPMA_OBJECT key_no_dictionary_attack = TPMA_OBJECT_NODA;

/// The object at persistent `handle`, as an ESAPI object.
static int persistent_object(ESYS_CONTEXT *esys, uint32_t handle, ESYS_TR *object, geolocate_tpm_error *error) {
    TSS2_RC rc = Esys_TR_FromTPMPublic(esys, handle, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, object);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM holds no key at 0x%08x (%s)", handle, Tss2_RC_Decode(rc));
        return -1;
    }
    return 0;
}

int geolocate_tpm_create(const char *conf, uint32_t handle, const uint8_t *auth, size_t auth_length, int replace,
                         uint8_t x[32], uint8_t y[32], geolocate_tpm_error *error) {
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
    if (open_tpm_for_key(conf, auth_length, &tcti, &esys, error) != 0) return -1;
    int result = -1;
    ESYS_TR parent = ESYS_TR_NONE, key = ESYS_TR_NONE, existing = ESYS_TR_NONE, persisted = ESYS_TR_NONE;
    TPM2B_PRIVATE *private_part = NULL;
    TPM2B_PUBLIC *public_part = NULL;
    TPM2B_DATA outside = {0};
    TPML_PCR_SELECTION pcrs = {0};
    TSS2_RC rc;

    // A storage key for the occasion (the TCG's ECC P-256 storage template): the signing key
    // is persisted on its own, so nothing on a signing path ever makes a primary key again.
    TPM2B_SENSITIVE_CREATE parent_sensitive = {0};
    TPM2B_PUBLIC parent_template = {0};
    parent_template.publicArea.type = TPM2_ALG_ECC;
    parent_template.publicArea.nameAlg = TPM2_ALG_SHA256;
    parent_template.publicArea.objectAttributes = TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT | TPMA_OBJECT_FIXEDTPM
        | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA;
    parent_template.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES;
    parent_template.publicArea.parameters.eccDetail.symmetric.keyBits.aes = 128;
    parent_template.publicArea.parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB;
    parent_template.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
    parent_template.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    parent_template.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
    rc = Esys_CreatePrimary(esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &parent_sensitive,
                            &parent_template, &outside, &pcrs, &parent, NULL, NULL, NULL, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not make a storage key (%s)", Tss2_RC_Decode(rc));
        goto done;
    }

    TPM2B_SENSITIVE_CREATE key_sensitive = {0};
    key_sensitive.sensitive.userAuth.size = (UINT16)auth_length;
    if (auth_length > 0) memcpy(key_sensitive.sensitive.userAuth.buffer, auth, auth_length);
    TPM2B_PUBLIC key_template = {0};
    key_template.publicArea.type = TPM2_ALG_ECC;
    key_template.publicArea.nameAlg = TPM2_ALG_SHA256;
    key_template.publicArea.objectAttributes = key_attributes | key_no_dictionary_attack;
    key_template.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL;
    key_template.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_ECDSA;
    key_template.publicArea.parameters.eccDetail.scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
    key_template.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    key_template.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
    rc = Esys_Create(esys, parent, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &key_sensitive, &key_template, &outside, &pcrs,
                     &private_part, &public_part, NULL, NULL, NULL);
    memset(&key_sensitive, 0, sizeof key_sensitive);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not make a signing key (%s)", Tss2_RC_Decode(rc));
        goto done;
    }
    rc = Esys_Load(esys, parent, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, private_part, public_part, &key);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not load the key it made (%s)", Tss2_RC_Decode(rc));
        goto done;
    }
    if (Esys_TR_FromTPMPublic(esys, handle, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &existing) == TSS2_RC_SUCCESS) {
        if (!replace) {
            fail(error, 0, "the TPM already holds a key at 0x%08x", handle);
            goto done;
        }
        ESYS_TR none = ESYS_TR_NONE;
        rc = Esys_EvictControl(esys, ESYS_TR_RH_OWNER, existing, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, handle, &none);
        if (rc != TSS2_RC_SUCCESS) {
            fail(error, rc, "the TPM would not remove the key at 0x%08x (%s)", handle, Tss2_RC_Decode(rc));
            goto done;
        }
        existing = ESYS_TR_NONE;
    }
    rc = Esys_EvictControl(esys, ESYS_TR_RH_OWNER, key, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, handle, &persisted);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not keep the key at 0x%08x (%s)", handle, Tss2_RC_Decode(rc));
        goto done;
    }
    padded(&public_part->publicArea.unique.ecc.x, x);
    padded(&public_part->publicArea.unique.ecc.y, y);
    result = 0;
done:
    if (key != ESYS_TR_NONE) Esys_FlushContext(esys, key);
    if (parent != ESYS_TR_NONE) Esys_FlushContext(esys, parent);
    Esys_Free(private_part);
    Esys_Free(public_part);
    close_tpm(&tcti, &esys);
    return result;
}

int geolocate_tpm_public(const char *conf, uint32_t handle, uint8_t x[32], uint8_t y[32], geolocate_tpm_error *error) {
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
    if (open_tpm(conf, &tcti, &esys, error) != 0) return -1;
    int result = -1;
    ESYS_TR key;
    TPM2B_PUBLIC *public_part = NULL;
    if (persistent_object(esys, handle, &key, error) != 0) goto done;
    TSS2_RC rc = Esys_ReadPublic(esys, key, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &public_part, NULL, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not read the key at 0x%08x (%s)", handle, Tss2_RC_Decode(rc));
        goto done;
    }
    const TPMT_PUBLIC *area = &public_part->publicArea;
    if (area->type != TPM2_ALG_ECC || area->parameters.eccDetail.curveID != TPM2_ECC_NIST_P256
        || (area->objectAttributes & key_attributes) != key_attributes || (area->objectAttributes & TPMA_OBJECT_RESTRICTED)
        || area->parameters.eccDetail.scheme.scheme != TPM2_ALG_ECDSA) {
        fail(error, 0, "the key at 0x%08x is no P-256 ECDSA signing key made inside this TPM", handle);
        goto done;
    }
    padded(&area->unique.ecc.x, x);
    padded(&area->unique.ecc.y, y);
    result = 0;
done:
    Esys_Free(public_part);
    close_tpm(&tcti, &esys);
    return result;
}

int geolocate_tpm_sign(const char *conf, uint32_t handle, const uint8_t *auth, size_t auth_length, const uint8_t digest[32],
                       uint8_t r[32], uint8_t s[32], geolocate_tpm_error *error) {
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
    if (open_tpm_for_key(conf, auth_length, &tcti, &esys, error) != 0) return -1;
    int result = -1;
    ESYS_TR key;
    TPMT_SIGNATURE *signature = NULL;
    if (persistent_object(esys, handle, &key, error) != 0) goto done;
    TPM2B_AUTH authorisation = {0};
    authorisation.size = (UINT16)auth_length;
    if (auth_length > 0) memcpy(authorisation.buffer, auth, auth_length);
    TSS2_RC rc = Esys_TR_SetAuth(esys, key, &authorisation);
    memset(&authorisation, 0, sizeof authorisation);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "cannot authorise the TPM key (%s)", Tss2_RC_Decode(rc));
        goto done;
    }
    TPM2B_DIGEST hashed = {0};
    hashed.size = 32;
    memcpy(hashed.buffer, digest, 32);
    TPMT_SIG_SCHEME scheme = {0};
    scheme.scheme = TPM2_ALG_ECDSA;
    scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
    // No ticket: the key is not restricted, so the TPM signs a digest it did not hash itself.
    TPMT_TK_HASHCHECK validation = {0};
    validation.tag = TPM2_ST_HASHCHECK;
    validation.hierarchy = TPM2_RH_NULL;
    rc = Esys_Sign(esys, key, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &hashed, &scheme, &validation, &signature);
    if (rc != TSS2_RC_SUCCESS) {
        if (geolocate_tpm_is_lockout(rc)) {
            fail(error, rc, "the TPM is in dictionary-attack lockout after failed authorisations; it refuses to sign until the lockout ends (%s)",
                 Tss2_RC_Decode(rc));
        } else if (geolocate_tpm_is_auth_failure(rc)) {
            fail(error, rc, "the TPM refused the key's authorisation value: this is not the key's file (%s)", Tss2_RC_Decode(rc));
        } else {
            fail(error, rc, "the TPM would not sign (%s)", Tss2_RC_Decode(rc));
        }
        goto done;
    }
    if (signature->sigAlg != TPM2_ALG_ECDSA) {
        fail(error, 0, "the TPM signed with another algorithm than ECDSA");
        goto done;
    }
    padded(&signature->signature.ecdsa.signatureR, r);
    padded(&signature->signature.ecdsa.signatureS, s);
    result = 0;
done:
    Esys_Free(signature);
    close_tpm(&tcti, &esys);
    return result;
}

int geolocate_tpm_evict(const char *conf, uint32_t handle, geolocate_tpm_error *error) {
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
    if (open_tpm(conf, &tcti, &esys, error) != 0) return -1;
    int result = -1;
    ESYS_TR key, none = ESYS_TR_NONE;
    if (persistent_object(esys, handle, &key, error) != 0) goto done;
    TSS2_RC rc = Esys_EvictControl(esys, ESYS_TR_RH_OWNER, key, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, handle, &none);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not remove the key at 0x%08x (%s)", handle, Tss2_RC_Decode(rc));
        goto done;
    }
    result = 0;
done:
    close_tpm(&tcti, &esys);
    return result;
}
