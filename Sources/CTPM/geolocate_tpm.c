#include "geolocate_tpm.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
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

// MARK: Attestation

/// The TCG EK Credential Profile's template L-1 (RSA-2048, AES-128-CFB, the policy
/// PolicySecret(TPM_RH_ENDORSEMENT)): the endorsement key whose certificate sits at
/// GEOLOCATE_TPM_EK_CERTIFICATE_INDEX. Made from the endorsement seed, it is the same key
/// every time, and a TPM clear leaves it so.
static void ek_template(TPM2B_PUBLIC *template) {
    static const uint8_t policy[32] = {0x83, 0x71, 0x97, 0x67, 0x44, 0x84, 0xB3, 0xF8, 0x1A, 0x90, 0xCC,
                                       0x8D, 0x46, 0xA5, 0xD7, 0x24, 0xFD, 0x52, 0xD7, 0x6E, 0x06, 0x52,
                                       0x0B, 0x64, 0xF2, 0xA1, 0xDA, 0x1B, 0x33, 0x14, 0x69, 0xAA};
    memset(template, 0, sizeof *template);
    TPMT_PUBLIC *area = &template->publicArea;
    area->type = TPM2_ALG_RSA;
    area->nameAlg = TPM2_ALG_SHA256;
    area->objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN
        | TPMA_OBJECT_ADMINWITHPOLICY | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT;
    area->authPolicy.size = sizeof policy;
    memcpy(area->authPolicy.buffer, policy, sizeof policy);
    area->parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_AES;
    area->parameters.rsaDetail.symmetric.keyBits.aes = 128;
    area->parameters.rsaDetail.symmetric.mode.aes = TPM2_ALG_CFB;
    area->parameters.rsaDetail.scheme.scheme = TPM2_ALG_NULL;
    area->parameters.rsaDetail.keyBits = 2048;
    area->parameters.rsaDetail.exponent = 0;
    area->unique.rsa.size = 256;
}

/// The attributes of an attestation key: a restricted signing key (it signs only what the
/// TPM itself made, such as TPMS_ATTEST), made inside this TPM and never to leave it.
static const TPMA_OBJECT ak_attributes = key_attributes | TPMA_OBJECT_RESTRICTED;

/// Makes the endorsement key (transient: the caller flushes `ek`) and gives its public area.
static int make_ek(ESYS_CONTEXT *esys, ESYS_TR *ek, TPM2B_PUBLIC **ek_public, geolocate_tpm_error *error) {
    TPM2B_SENSITIVE_CREATE sensitive = {0};
    TPM2B_PUBLIC template;
    ek_template(&template);
    TPM2B_DATA outside = {0};
    TPML_PCR_SELECTION pcrs = {0};
    TSS2_RC rc = Esys_CreatePrimary(esys, ESYS_TR_RH_ENDORSEMENT, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive,
                                    &template, &outside, &pcrs, ek, ek_public, NULL, NULL, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not make its endorsement key (%s)", Tss2_RC_Decode(rc));
        return -1;
    }
    return 0;
}

/// Starts a policy session for the endorsement key, whose use needs PolicySecret of the
/// endorsement hierarchy (the caller flushes `session`).
static int start_ek_session(ESYS_CONTEXT *esys, ESYS_TR *session, geolocate_tpm_error *error) {
    TPMT_SYM_DEF symmetric = {.algorithm = TPM2_ALG_NULL};
    TSS2_RC rc = Esys_StartAuthSession(esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, NULL,
                                       TPM2_SE_POLICY, &symmetric, TPM2_ALG_SHA256, session);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not start a policy session (%s)", Tss2_RC_Decode(rc));
        return -1;
    }
    return 0;
}

/// Satisfies the endorsement key's policy in `session`: again before each command using it,
/// since every command that succeeds resets the session's policy.
static int satisfy_ek_policy(ESYS_CONTEXT *esys, ESYS_TR session, geolocate_tpm_error *error) {
    TSS2_RC rc = Esys_PolicySecret(esys, ESYS_TR_RH_ENDORSEMENT, session, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, NULL,
                                   NULL, NULL, 0, NULL, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM refused the endorsement hierarchy's authorisation (%s)", Tss2_RC_Decode(rc));
        return -1;
    }
    return 0;
}

/// Whether something sits at the persistent or NV `handle`, asked without an error for "no".
static int holds(ESYS_CONTEXT *esys, uint32_t handle, int *found, geolocate_tpm_error *error) {
    TPMI_YES_NO more;
    TPMS_CAPABILITY_DATA *capability = NULL;
    TSS2_RC rc = Esys_GetCapability(esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, TPM2_CAP_HANDLES, handle, 1, &more,
                                    &capability);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not list its handles (%s)", Tss2_RC_Decode(rc));
        return -1;
    }
    *found = capability->data.handles.count > 0 && capability->data.handles.handle[0] == handle;
    Esys_Free(capability);
    return 0;
}

/// Makes an attestation key under the endorsement key `ek` and persists it at `ak_handle`.
static int make_ak(ESYS_CONTEXT *esys, ESYS_TR ek, uint32_t ak_handle, ESYS_TR *ak, geolocate_tpm_error *error) {
    int result = -1;
    ESYS_TR session = ESYS_TR_NONE, loaded = ESYS_TR_NONE;
    TPM2B_PRIVATE *private_part = NULL;
    TPM2B_PUBLIC *public_part = NULL;
    TPM2B_SENSITIVE_CREATE sensitive = {0};
    TPM2B_DATA outside = {0};
    TPML_PCR_SELECTION pcrs = {0};
    TPM2B_PUBLIC template = {0};
    template.publicArea.type = TPM2_ALG_ECC;
    template.publicArea.nameAlg = TPM2_ALG_SHA256;
    // Outside dictionary-attack protection too: its authorisation is empty, and a lockout
    // caused by anyone would otherwise stop every attestation.
    template.publicArea.objectAttributes = ak_attributes | key_no_dictionary_attack;
    template.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL;
    template.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_ECDSA;
    template.publicArea.parameters.eccDetail.scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
    template.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    template.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
    TSS2_RC rc;

    if (start_ek_session(esys, &session, error) != 0) goto done;
    if (satisfy_ek_policy(esys, session, error) != 0) goto done;
    rc = Esys_Create(esys, ek, session, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive, &template, &outside, &pcrs, &private_part,
                     &public_part, NULL, NULL, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not make an attestation key (%s)", Tss2_RC_Decode(rc));
        goto done;
    }
    if (satisfy_ek_policy(esys, session, error) != 0) goto done;
    rc = Esys_Load(esys, ek, session, ESYS_TR_NONE, ESYS_TR_NONE, private_part, public_part, &loaded);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not load the attestation key it made (%s)", Tss2_RC_Decode(rc));
        goto done;
    }
    rc = Esys_EvictControl(esys, ESYS_TR_RH_OWNER, loaded, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, ak_handle, ak);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not keep the attestation key at 0x%08x (%s)", ak_handle, Tss2_RC_Decode(rc));
        goto done;
    }
    result = 0;
done:
    if (loaded != ESYS_TR_NONE) Esys_FlushContext(esys, loaded);
    if (session != ESYS_TR_NONE) Esys_FlushContext(esys, session);
    Esys_Free(private_part);
    Esys_Free(public_part);
    return result;
}

/// The attestation key at `ak_handle`, made there first when there is none, checked to be
/// a restricted P-256 signing key made in this TPM.
static int attestation_key(ESYS_CONTEXT *esys, ESYS_TR ek, uint32_t ak_handle, ESYS_TR *ak, TPM2B_PUBLIC **ak_public,
                           geolocate_tpm_error *error) {
    int found;
    if (holds(esys, ak_handle, &found, error) != 0) return -1;
    if (found) {
        if (persistent_object(esys, ak_handle, ak, error) != 0) return -1;
    } else if (make_ak(esys, ek, ak_handle, ak, error) != 0) {
        return -1;
    }
    TSS2_RC rc = Esys_ReadPublic(esys, *ak, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ak_public, NULL, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not read the attestation key at 0x%08x (%s)", ak_handle, Tss2_RC_Decode(rc));
        return -1;
    }
    const TPMT_PUBLIC *area = &(*ak_public)->publicArea;
    if (area->type != TPM2_ALG_ECC || area->parameters.eccDetail.curveID != TPM2_ECC_NIST_P256
        || (area->objectAttributes & ak_attributes) != ak_attributes || (area->objectAttributes & TPMA_OBJECT_DECRYPT)) {
        fail(error, 0, "the object at 0x%08x is no attestation key (a restricted P-256 signing key made in this TPM)", ak_handle);
        return -1;
    }
    return 0;
}

/// `bytes` into `out`, when they fit.
static int put(geolocate_tpm_buffer *out, const uint8_t *bytes, size_t length, const char *what, geolocate_tpm_error *error) {
    if (length > out->capacity) {
        fail(error, 0, "the %s (%zu bytes) is larger than the %zu bytes kept for it", what, length, out->capacity);
        return -1;
    }
    memcpy(out->bytes, bytes, length);
    out->length = length;
    return 0;
}

/// `area` marshalled (TPM 2.0 Part 2) into `out`.
static int marshal_public(const TPMT_PUBLIC *area, geolocate_tpm_buffer *out, const char *what, geolocate_tpm_error *error) {
    size_t offset = 0;
    TSS2_RC rc = Tss2_MU_TPMT_PUBLIC_Marshal(area, out->bytes, out->capacity, &offset);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "cannot write the %s's public area (%s)", what, Tss2_RC_Decode(rc));
        return -1;
    }
    out->length = offset;
    return 0;
}

/// The endorsement key's certificate from the TPM's NV, read in pieces as large as the TPM
/// takes, with the index's own authorisation when it allows that, else the owner's.
static int read_ek_certificate(ESYS_CONTEXT *esys, geolocate_tpm_buffer *out, geolocate_tpm_error *error) {
    const uint32_t index = GEOLOCATE_TPM_EK_CERTIFICATE_INDEX;
    int found;
    if (holds(esys, index, &found, error) != 0) return -1;
    if (!found) {
        fail(error, 0, "the TPM has no endorsement key certificate (no RSA EK certificate in NV at 0x%08x)", index);
        return -1;
    }
    ESYS_TR nv;
    TPM2B_NV_PUBLIC *nv_public = NULL;
    TSS2_RC rc = Esys_TR_FromTPMPublic(esys, index, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &nv);
    if (rc == TSS2_RC_SUCCESS) rc = Esys_NV_ReadPublic(esys, nv, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &nv_public, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not describe its EK certificate's NV index 0x%08x (%s)", index, Tss2_RC_Decode(rc));
        return -1;
    }
    size_t total = nv_public->nvPublic.dataSize;
    TPMA_NV attributes = nv_public->nvPublic.attributes;
    Esys_Free(nv_public);
    if (total > out->capacity) {
        fail(error, 0, "the EK certificate (%zu bytes) is larger than the %zu bytes kept for it", total, out->capacity);
        return -1;
    }
    size_t piece = TPM2_MAX_NV_BUFFER_SIZE;
    TPMI_YES_NO more;
    TPMS_CAPABILITY_DATA *capability = NULL;
    rc = Esys_GetCapability(esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, TPM2_CAP_TPM_PROPERTIES, TPM2_PT_NV_BUFFER_MAX, 1,
                            &more, &capability);
    if (rc == TSS2_RC_SUCCESS && capability->data.tpmProperties.count > 0
        && capability->data.tpmProperties.tpmProperty[0].property == TPM2_PT_NV_BUFFER_MAX
        && capability->data.tpmProperties.tpmProperty[0].value > 0
        && capability->data.tpmProperties.tpmProperty[0].value < piece) {
        piece = capability->data.tpmProperties.tpmProperty[0].value;
    }
    Esys_Free(capability);
    ESYS_TR reader = (attributes & TPMA_NV_AUTHREAD) ? nv : ESYS_TR_RH_OWNER;
    for (size_t offset = 0; offset < total;) {
        UINT16 size = (UINT16)(total - offset < piece ? total - offset : piece);
        TPM2B_MAX_NV_BUFFER *data = NULL;
        rc = Esys_NV_Read(esys, reader, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, size, (UINT16)offset, &data);
        if (rc != TSS2_RC_SUCCESS && reader == nv && (attributes & TPMA_NV_OWNERREAD)) {
            reader = ESYS_TR_RH_OWNER;
            continue;
        }
        if (rc != TSS2_RC_SUCCESS) {
            fail(error, rc, "the TPM would not read its EK certificate from NV 0x%08x (%s)", index, Tss2_RC_Decode(rc));
            return -1;
        }
        size_t got = data->size > total - offset ? total - offset : data->size;
        memcpy(out->bytes + offset, data->buffer, got);
        Esys_Free(data);
        if (got == 0) {
            fail(error, 0, "the TPM read nothing from its EK certificate at offset %zu", offset);
            return -1;
        }
        offset += got;
    }
    out->length = total;
    return 0;
}

int geolocate_tpm_attest(const char *conf, uint32_t handle, const uint8_t *auth, size_t auth_length, uint32_t ak_handle,
                         const uint8_t *nonce, size_t nonce_length, geolocate_tpm_attestation *out, geolocate_tpm_error *error) {
    TPM2B_DATA qualifying = {0};
    if (nonce_length > sizeof qualifying.buffer) {
        fail(error, 0, "an attestation's nonce is at most %zu bytes", sizeof qualifying.buffer);
        return -1;
    }
    qualifying.size = (UINT16)nonce_length;
    if (nonce_length > 0) memcpy(qualifying.buffer, nonce, nonce_length);
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
    if (open_tpm_for_key(conf, auth_length, &tcti, &esys, error) != 0) return -1;
    int result = -1;
    ESYS_TR key, ek = ESYS_TR_NONE, ak;
    TPM2B_PUBLIC *ek_public = NULL, *ak_public = NULL, *key_public = NULL;
    TPM2B_ATTEST *cert_info = NULL;
    TPMT_SIGNATURE *signature = NULL;
    TSS2_RC rc;

    if (persistent_object(esys, handle, &key, error) != 0) goto done;
    if (make_ek(esys, &ek, &ek_public, error) != 0) goto done;
    if (attestation_key(esys, ek, ak_handle, &ak, &ak_public, error) != 0) goto done;
    // The endorsement key has done its part: its slot is free for the two keys Certify loads.
    Esys_FlushContext(esys, ek);
    ek = ESYS_TR_NONE;
    rc = Esys_ReadPublic(esys, key, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &key_public, NULL, NULL);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not read the key at 0x%08x (%s)", handle, Tss2_RC_Decode(rc));
        goto done;
    }
    // Certify authorises the certified key in the admin role: with adminWithPolicy clear,
    // that is its authorisation value.
    TPM2B_AUTH authorisation = {0};
    authorisation.size = (UINT16)auth_length;
    if (auth_length > 0) memcpy(authorisation.buffer, auth, auth_length);
    rc = Esys_TR_SetAuth(esys, key, &authorisation);
    memset(&authorisation, 0, sizeof authorisation);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "cannot authorise the TPM key (%s)", Tss2_RC_Decode(rc));
        goto done;
    }
    TPMT_SIG_SCHEME scheme = {.scheme = TPM2_ALG_NULL};
    rc = Esys_Certify(esys, key, ak, ESYS_TR_PASSWORD, ESYS_TR_PASSWORD, ESYS_TR_NONE, &qualifying, &scheme, &cert_info,
                      &signature);
    if (rc != TSS2_RC_SUCCESS) {
        if (geolocate_tpm_is_auth_failure(rc)) {
            fail(error, rc, "the TPM refused the key's authorisation value: this is not the key's file (%s)", Tss2_RC_Decode(rc));
        } else {
            fail(error, rc, "the TPM would not certify the key at 0x%08x (%s)", handle, Tss2_RC_Decode(rc));
        }
        goto done;
    }
    size_t offset = 0;
    rc = Tss2_MU_TPMT_SIGNATURE_Marshal(signature, out->signature.bytes, out->signature.capacity, &offset);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "cannot write the attestation's signature (%s)", Tss2_RC_Decode(rc));
        goto done;
    }
    out->signature.length = offset;
    if (put(&out->cert_info, cert_info->attestationData, cert_info->size, "attestation", error) != 0
        || marshal_public(&key_public->publicArea, &out->public_area, "signing key", error) != 0
        || marshal_public(&ak_public->publicArea, &out->ak_public, "attestation key", error) != 0
        || marshal_public(&ek_public->publicArea, &out->ek_public, "endorsement key", error) != 0
        || read_ek_certificate(esys, &out->ek_certificate, error) != 0) {
        goto done;
    }
    result = 0;
done:
    if (ek != ESYS_TR_NONE) Esys_FlushContext(esys, ek);
    Esys_Free(ek_public);
    Esys_Free(ak_public);
    Esys_Free(key_public);
    Esys_Free(cert_info);
    Esys_Free(signature);
    close_tpm(&tcti, &esys);
    return result;
}

int geolocate_tpm_activate(const char *conf, uint32_t ak_handle, const uint8_t *credential_blob, size_t credential_blob_length,
                           const uint8_t *encrypted_secret, size_t encrypted_secret_length, uint8_t secret[32],
                           size_t *secret_length, geolocate_tpm_error *error) {
    TPM2B_ID_OBJECT blob = {0};
    TPM2B_ENCRYPTED_SECRET seed = {0};
    if (credential_blob_length > sizeof blob.credential || encrypted_secret_length > sizeof seed.secret) {
        fail(error, 0, "the credential (%zu bytes) or its secret (%zu bytes) is larger than a TPM takes", credential_blob_length,
             encrypted_secret_length);
        return -1;
    }
    blob.size = (UINT16)credential_blob_length;
    memcpy(blob.credential, credential_blob, credential_blob_length);
    seed.size = (UINT16)encrypted_secret_length;
    memcpy(seed.secret, encrypted_secret, encrypted_secret_length);
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
    if (open_tpm(conf, &tcti, &esys, error) != 0) return -1;
    int result = -1;
    ESYS_TR ak, ek = ESYS_TR_NONE, session = ESYS_TR_NONE;
    TPM2B_PUBLIC *ek_public = NULL;
    TPM2B_DIGEST *recovered = NULL;
    int found;

    if (holds(esys, ak_handle, &found, error) != 0) goto done;
    if (!found) {
        fail(error, 0, "the TPM holds no attestation key at 0x%08x (an attestation makes it)", ak_handle);
        goto done;
    }
    if (persistent_object(esys, ak_handle, &ak, error) != 0) goto done;
    if (make_ek(esys, &ek, &ek_public, error) != 0) goto done;
    if (start_ek_session(esys, &session, error) != 0) goto done;
    if (satisfy_ek_policy(esys, session, error) != 0) goto done;
    // The attestation key in the admin role (its empty authorisation), the endorsement key
    // in the user role through its policy.
    TSS2_RC rc = Esys_ActivateCredential(esys, ak, ek, ESYS_TR_PASSWORD, session, ESYS_TR_NONE, &blob, &seed, &recovered);
    if (rc != TSS2_RC_SUCCESS) {
        fail(error, rc, "the TPM would not open the credential: it was not made for this TPM's endorsement and attestation keys (%s)",
             Tss2_RC_Decode(rc));
        goto done;
    }
    if (recovered->size > 32) {
        fail(error, 0, "the credential's secret is %u bytes, more than 32", (unsigned)recovered->size);
        goto done;
    }
    memcpy(secret, recovered->buffer, recovered->size);
    *secret_length = recovered->size;
    result = 0;
done:
    if (session != ESYS_TR_NONE) Esys_FlushContext(esys, session);
    if (ek != ESYS_TR_NONE) Esys_FlushContext(esys, ek);
    Esys_Free(ek_public);
    Esys_Free(recovered);
    close_tpm(&tcti, &esys);
    return result;
}
