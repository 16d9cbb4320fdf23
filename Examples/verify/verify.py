#!/usr/bin/python3
"""A risk server's check of geolocate location tokens, with PyJWT (Debian: python3-jwt python3-cryptography).

usage: verify.py --store FILE enrol KEYS_FILE [--iss ID] [--replace]
       verify.py --store FILE nonce ISS
       verify.py --store FILE check AUDIENCE [--accept-replay] [--now SECONDS] < TOKEN
       verify.py --store FILE rotate < STATEMENT
       verify.py --store FILE --ca ROOT.pem [--ca INTERMEDIATE.pem] attest-challenge ISS [--replace] < EVIDENCE
       verify.py --store FILE attest-enrol ISS < SECRET
       verify.py --store FILE attest-check ISS NONCE < EVIDENCE
Refusals exit 1 with one line `refused: REASON` on stderr; usage errors and unusable files exit 2.
"""
import argparse, base64, contextlib, datetime, errno, fcntl, hashlib, hmac, json, math, os, secrets, stat, struct, sys, tempfile, time
import jwt
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

MAX_SKEW = 60         # seconds between a token's iat and this server's clock, either way
NONCE_LIFETIME = 300  # seconds a nonce issued for a login stays usable
MAX_LIFETIME = 3600   # seconds from a token's iat to its exp (geolocate's signing.tokenLifetime is at most 1 h)
MAX_INPUT = 64 * 1024  # bytes of a token or statement on stdin
LOCK_WAIT = 10       # seconds a check waits for another one holding the store
FORBIDDEN_HEADERS = ("jwk", "jku", "x5u", "x5c")  # a token never names its own key
CHALLENGE_LIFETIME = 300  # seconds a credential challenge stays answerable


class Refused(Exception):
    """A token, statement or key file this server will not take."""


class Unusable(Exception):
    """A store or lock file this script cannot use (exit 2, not a refusal)."""


def unusable(path, error):
    """An Unusable naming `path` and what is wrong with it."""
    if isinstance(error, OSError):
        error = "a symbolic link, not followed" if error.errno == errno.ELOOP else error.strerror
    elif isinstance(error, ValueError):
        error = f"not JSON ({error})"
    return Unusable(f"{path}: {error}")


def unpadded(value, what):
    """The 32 bytes whose canonical unpadded base64url `value` is: one key, one text, one kid."""
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (TypeError, ValueError):
        raw = b""
    if len(raw) != 32 or base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != value:
        raise Refused(f"a key's {what} is not the unpadded base64url of 32 bytes, in its canonical form")
    return raw


def b64url(data):
    """`data` as unpadded base64url."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def thumbprint(jwk):
    """The RFC 7638 thumbprint of a public JWK, checked to be an Ed25519 key (EdDSA) or a P-256 point (ES256)."""
    if not isinstance(jwk, dict) or "d" in jwk:
        raise Refused("a key is not a public JWK")
    if jwk.get("kty") == "OKP" and jwk.get("crv") == "Ed25519":
        unpadded(jwk.get("x"), "x")
        members = {"crv": "Ed25519", "kty": "OKP", "x": jwk["x"]}
    elif jwk.get("kty") == "EC" and jwk.get("crv") == "P-256":
        x, y = unpadded(jwk.get("x"), "x"), unpadded(jwk.get("y"), "y")
        try:
            ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"), ec.SECP256R1()).public_key()
        except ValueError:
            raise Refused("a key's x and y are not a point on P-256") from None
        members = {"crv": "P-256", "kty": "EC", "x": jwk["x"], "y": jwk["y"]}
    else:
        raise Refused("a key is neither an Ed25519 nor a P-256 public JWK")
    kid = b64url(hashlib.sha256(json.dumps(members, separators=(",", ":")).encode()).digest())
    if jwk.get("kid", kid) != kid:
        raise Refused("a key's kid is not its RFC 7638 thumbprint")
    return kid


def stored_jwk(jwk):
    """The JWK as the store keeps it: its required members and its kid, nothing the device added."""
    kid = thumbprint(jwk)
    return {name: jwk[name] for name in (("crv", "kty", "x") if jwk["kty"] == "OKP" else ("crv", "kty", "x", "y"))} | {"kid": kid}


def algorithm(jwk):
    """The one JWS alg a key verifies: EdDSA for Ed25519, ES256 for P-256."""
    return "EdDSA" if jwk["kty"] == "OKP" else "ES256"


def store_problem(store):
    """What is wrong with a store's contents, or None when they are shaped as this script writes them."""
    def instant(value):
        return type(value) in (int, float) and math.isfinite(value)

    def key(record):
        try:
            return isinstance(record, dict) and thumbprint(record["jwk"]) == record["jwk"]["kid"] and (
                record["retired"] is None or instant(record["retired"]))
        except (Refused, KeyError, TypeError, AttributeError):
            return False
    if not isinstance(store, dict) or not isinstance(store.get("devices"), dict):
        return 'not an object with a "devices" object'
    for iss, device in store["devices"].items():
        if not (isinstance(device, dict) and isinstance(device.get("keys"), list) and all(map(key, device["keys"]))
                and all(isinstance(device.get(name), dict) and all(map(instant, device[name].values()))
                        for name in ("jtis", "nonces"))):
            return f"device {iss!r} is not keys, jtis and nonces as this script writes them"
    attested = store.get("attestation", {})
    if not isinstance(attested, dict) or not all(
            isinstance(entry, dict) and all(name in entry and isinstance(entry[name], (str, type(None))) for name in ("ak", "ek"))
            and "challenge" in entry
            and (entry.get("challenge") is None or isinstance(entry["challenge"], dict)
                 and all(isinstance(entry["challenge"].get(name), str) for name in ("ak", "ek", "secret"))
                 and instant(entry["challenge"].get("until")))
            for entry in attested.values()):
        return '"attestation" is not attestation keys and challenges as this script writes them'
    return None


@contextlib.contextmanager
def opened(path):
    """The store's contents, under an exclusive lock; what the block leaves there is written back atomically.
    Neither the store nor its lock is followed through a symbolic link."""
    try:
        lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as error:
        raise unusable(path + ".lock", error) from None
    with os.fdopen(lock) as lock:
        # Another user's lock could be held for ever: only the server's own is waited for, 10 s at most.
        if not stat.S_ISREG(os.fstat(lock.fileno()).st_mode) or os.fstat(lock.fileno()).st_uid != os.geteuid():
            raise Unusable(f"{path}.lock: not a regular file of this user's")
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Unusable(f"{path}.lock: held by another process for {LOCK_WAIT} s") from None
                time.sleep(0.05)
        try:
            # Without blocking: a FIFO in the store's place is refused, not waited on.
            with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC), encoding="utf-8") as file:
                if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                    raise Unusable(f"{path}: not a regular file")
                store = json.load(file)
        except FileNotFoundError:
            store = {"devices": {}}
        except (OSError, ValueError, RecursionError) as error:
            raise unusable(path, error) from None
        problem = store_problem(store)
        if problem:
            raise Unusable(f"{path}: {problem}")
        yield store
        descriptor, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".store.")
        with os.fdopen(descriptor, "w") as file:
            json.dump(store, file, indent=1, sort_keys=True)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)


def prune(store, now):
    """Drops the jti's, nonces and credential challenges whose time has passed."""
    for device in store["devices"].values():
        device["jtis"] = {jti: exp for jti, exp in device["jtis"].items() if exp > now}
        device["nonces"] = {nonce: until for nonce, until in device["nonces"].items() if until > now}
    for entry in store.get("attestation", {}).values():
        if entry["challenge"] is not None and entry["challenge"]["until"] <= now:
            entry["challenge"] = None


def stdin_text():
    """What stdin holds, up to MAX_INPUT bytes."""
    data = sys.stdin.buffer.read(MAX_INPUT + 1)
    if len(data) > MAX_INPUT:
        raise Refused(f"the input is larger than {MAX_INPUT} bytes")
    return data.decode().strip()


def unverified(token, typ):
    """The header and claims of a compact EdDSA or ES256 JWS of type `typ`, before any signature check."""
    header = jwt.get_unverified_header(token)
    if header.get("alg") not in ("EdDSA", "ES256") or any(name in header for name in FORBIDDEN_HEADERS):
        raise Refused("not an EdDSA or ES256 token that names its key by kid alone")
    if header.get("typ", "JWT") != typ:
        raise Refused(f"not a {typ}")
    claims = jwt.decode(token, options={"verify_signature": False})
    if not isinstance(claims.get("iss"), str):
        raise Refused("no iss")
    return header, claims


def trusted_key(store, header, claims):
    """The device (by `iss`) and the key record (by `kid`) this store trusts for the token."""
    device = store["devices"].get(claims["iss"])
    if device is None:
        raise Refused("the device is not enrolled here")
    for record in device["keys"]:
        if record["jwk"]["kid"] == header.get("kid"):
            if header["alg"] != algorithm(record["jwk"]):
                raise Refused(f"the token's alg {header['alg']} is not its key's ({algorithm(record['jwk'])})")
            return device, record
    raise Refused("signed by a key this store does not trust for the device")


def verified(token, record, **options):
    """The claims of `token` once its signature verifies by the key of `record`, by that key's alg alone."""
    alg = algorithm(record["jwk"])
    if alg == "ES256":
        try:
            raw = base64.urlsafe_b64decode(token.rsplit(".", 1)[1] + "==")
        except (IndexError, ValueError):
            raw = b""
        if len(raw) != 64:  # r and s, 32 bytes each (RFC 7518 §3.4), not DER or shortened
            raise Refused("an ES256 signature is not r and s of 32 bytes each")
    return jwt.decode(token, jwt.PyJWK.from_dict(record["jwk"]).key, algorithms=[alg], **options)


def enrol(store, args, now):
    """Trusts the signing key (the first) of what `geolocate key show` printed, for its iss."""
    with open(args.keys) as file:
        shown = json.load(file)
    if not isinstance(shown, dict):
        raise Refused("the key file is not what `geolocate key show` prints")
    iss = shown.get("iss") or args.iss
    if not isinstance(iss, str) or (args.iss and args.iss != iss):
        raise Refused("the key file names no device id (give --iss) or another one than --iss")
    if not shown.get("keys"):
        raise Refused("the key file lists no keys")
    jwk = stored_jwk(shown["keys"][0])
    device = store["devices"].get(iss)
    if device and not args.replace:
        if [record["jwk"] for record in device["keys"] if record["retired"] is None] == [jwk]:
            return f"{iss} is already enrolled with key {jwk['kid']}"
        raise Refused("the device is enrolled with other keys: follow its rotation statement (rotate), or --replace")
    device = device or {"jtis": {}, "nonces": {}}
    device["keys"] = [{"enrolled": now, "jwk": jwk, "retired": None}]
    store["devices"][iss] = device
    others = f" (the signing key; {len(shown['keys']) - 1} other keys listed are not trusted)" if len(shown["keys"]) > 1 else ""
    return f"enrolled {iss} with key {jwk['kid']}{others}"


def nonce(store, args, now):
    """Issues a nonce for a login of the device, usable once before it expires."""
    if args.iss not in store["devices"]:
        raise Refused("the device is not enrolled here")
    value = "-"
    while value.startswith("-"):  # a nonce is an argument of attest-check, where a leading - would be an option
        value = secrets.token_urlsafe(24)
    store["devices"][args.iss]["nonces"][value] = now + NONCE_LIFETIME
    return value


def check(store, args, now):
    """The claims of a location token that passes every check, its jti and nonce then used up."""
    token = args.input
    header, claims = unverified(token, "JWT")
    device, record = trusted_key(store, header, claims)
    claims = verified(token, record, audience=args.audience,
                      options={"require": ["aud", "exp", "iat", "iss", "jti", "loc"],
                               "verify_exp": False, "verify_iat": False, "verify_nbf": False})
    if claims["aud"] != args.audience:
        raise Refused("the token is for another audience")
    exp, iat, jti = claims["exp"], claims["iat"], claims["jti"]
    if not all(type(claims[name]) is int for name in ("exp", "iat", "nbf") if name in claims) or not isinstance(jti, str):
        raise Refused("exp, iat or nbf is not an integer, or jti is not a string")  # NaN, Infinity, 1e400 compare oddly
    if exp <= now:
        raise Refused("the token has expired")
    if claims.get("nbf", 0) > now + MAX_SKEW:
        raise Refused("the token is not valid yet (nbf)")
    if exp - iat > MAX_LIFETIME:
        raise Refused(f"the token lives more than {MAX_LIFETIME} s (exp - iat)")
    if abs(now - iat) > MAX_SKEW:
        raise Refused(f"iat is more than {MAX_SKEW} s from this server's clock")
    if record["retired"] is not None and iat > record["retired"]:
        raise Refused("signed by a retired key after its rotation")
    if claims.get("src") == "replay" and not args.accept_replay:
        raise Refused("the location comes from a replayed NMEA log (src replay)")
    if jti in device["jtis"]:
        raise Refused("the token (its jti) was used before")
    if "nonce" in claims:
        if claims["nonce"] not in device["nonces"]:
            raise Refused("the nonce was not issued here for this device, or was used, or has expired")
        del device["nonces"][claims["nonce"]]
    device["jtis"][jti] = exp
    return json.dumps(claims)


def rotate(store, args, now):
    """Follows a key-rotation+jwt statement signed by the device's current key: its new key trusted, the old retired."""
    statement = args.input
    header, claims = unverified(statement, "key-rotation+jwt")
    device, record = trusted_key(store, header, claims)
    if record["retired"] is not None:
        raise Refused("the statement is signed by a retired key")
    claims = verified(statement, record, options={"require": ["iat", "iss", "jwk", "sub"], "verify_iat": False})
    jwk = claims["jwk"]
    if not isinstance(jwk, dict) or thumbprint(jwk) != claims["sub"] or type(claims["iat"]) is not int:
        raise Refused("the statement's sub is not the thumbprint of its jwk, or iat is not an integer")
    if any(known["jwk"]["kid"] == claims["sub"] for known in device["keys"]):
        raise Refused("the statement names a key this store already knows")
    record["retired"] = min(claims["iat"], now)  # tokens it signed until then are still in flight
    device["keys"].append({"enrolled": now, "jwk": stored_jwk(jwk), "retired": None})
    return f"{claims['iss']} now signs with key {claims['sub']}; key {record['jwk']['kid']} is retired"


# Attestation: evidence that a device's P-256 key lives in a TPM (`geolocate key attest`), checked against an
# attestation key (AK) enrolled once through a credential challenge to the TPM's endorsement key (EK).
# TPM 2.0 Part 1 §24 (credential protection), Part 2 (the structures), Part 3 (Certify, MakeCredential).

TPM_GENERATED_VALUE = 0xFF544347
TPM_ST_ATTEST_CERTIFY = 0x8017
TPM_ALG_RSA, TPM_ALG_SHA256, TPM_ALG_AES, TPM_ALG_NULL = 0x0001, 0x000B, 0x0006, 0x0010
TPM_ALG_ECDSA, TPM_ALG_ECC, TPM_ALG_CFB, TPM_ECC_NIST_P256 = 0x0018, 0x0023, 0x0043, 0x0003
TPM_RH_ENDORSEMENT = 0x4000000B
FIXED_TPM, FIXED_PARENT, SENSITIVE_DATA_ORIGIN = 1 << 1, 1 << 4, 1 << 5
RESTRICTED, DECRYPT, SIGN = 1 << 16, 1 << 17, 1 << 18
# The EK as the TCG EK Credential Profile's template L-1 makes it (RSA-2048, its certificate at NV 0x01c00002).
EK_L1_ATTRIBUTES = 0x000300B2  # fixedTPM, fixedParent, sensitiveDataOrigin, adminWithPolicy, restricted, decrypt
EK_L1_POLICY = bytes.fromhex("837197674484b3f81a90cc8d46a5d724fd52d76e06520b64f2a1da1b331469aa")  # PolicySecret(endorsement)
TCG_KP_EK_CERTIFICATE = x509.ObjectIdentifier("2.23.133.8.1")
EVIDENCE_MEMBERS = ("akPub", "certInfo", "ekCert", "ekPub", "pubArea", "sig")


class TPMReader:
    """Reads a marshalled TPM structure: big-endian integers, TPM2B's (a u16 size, then the bytes)."""

    def __init__(self, data, what):
        self.data, self.offset, self.what = data, 0, what

    def take(self, count):
        if self.offset + count > len(self.data):
            raise Refused(f"the {self.what} is cut short")
        self.offset += count
        return self.data[self.offset - count:self.offset]

    def u8(self):
        return self.take(1)[0]

    def u16(self):
        return struct.unpack(">H", self.take(2))[0]

    def u32(self):
        return struct.unpack(">I", self.take(4))[0]

    def u64(self):
        return struct.unpack(">Q", self.take(8))[0]

    def sized(self):
        return self.take(self.u16())

    def end(self):
        if self.offset != len(self.data):
            raise Refused(f"the {self.what} has bytes after its end")


def tpm_public(data, what):
    """A TPMT_PUBLIC of an ECC or RSA key, as a dict of its fields."""
    reader = TPMReader(data, what)
    area = {"type": reader.u16(), "nameAlg": reader.u16(), "attributes": reader.u32(), "authPolicy": reader.sized()}
    symmetric = reader.u16()
    area["symmetric"] = (symmetric,) if symmetric == TPM_ALG_NULL else (symmetric, reader.u16(), reader.u16())
    scheme = reader.u16()
    area["scheme"] = (scheme,) if scheme == TPM_ALG_NULL else (scheme, reader.u16())
    if area["type"] == TPM_ALG_ECC:
        area["curve"] = reader.u16()
        kdf = reader.u16()
        area["kdf"] = (kdf,) if kdf == TPM_ALG_NULL else (kdf, reader.u16())
        area["x"], area["y"] = reader.sized(), reader.sized()
    elif area["type"] == TPM_ALG_RSA:
        area["keyBits"], area["exponent"], area["n"] = reader.u16(), reader.u32(), reader.sized()
    else:
        raise Refused(f"the {what} is neither an ECC nor an RSA key")
    reader.end()
    return area


def tpm_name(public_bytes):
    """A TPM object's Name: its nameAlg (SHA-256) and the hash of its marshalled TPMT_PUBLIC."""
    return struct.pack(">H", TPM_ALG_SHA256) + hashlib.sha256(public_bytes).digest()


def qualified_name(parent, name):
    """The qualified Name of an object under the parent with qualified Name `parent` (SHA-256)."""
    return struct.pack(">H", TPM_ALG_SHA256) + hashlib.sha256(parent + name).digest()


def p256_key(area, what):
    """The P-256 public key of an ECC TPMT_PUBLIC."""
    if area["type"] != TPM_ALG_ECC or area["curve"] != TPM_ECC_NIST_P256 or len(area["x"]) > 32 or len(area["y"]) > 32:
        raise Refused(f"the {what} is not a P-256 key")
    try:
        return ec.EllipticCurvePublicNumbers(int.from_bytes(area["x"], "big"), int.from_bytes(area["y"], "big"),
                                             ec.SECP256R1()).public_key()
    except ValueError:
        raise Refused(f"the {what}'s point is not on P-256") from None


def evidence(text):
    """The evidence object `geolocate key attest` prints, its members decoded."""
    try:
        shown = json.loads(text)
    except ValueError:
        raise Refused("the evidence is not JSON") from None
    if not isinstance(shown, dict) or not all(isinstance(shown.get(name), str) for name in EVIDENCE_MEMBERS):
        raise Refused("the evidence is not an object of " + ", ".join(EVIDENCE_MEMBERS))
    decoded = {}
    for name in EVIDENCE_MEMBERS:
        try:
            decoded[name] = base64.urlsafe_b64decode(shown[name] + "=" * (-len(shown[name]) % 4))
        except ValueError:
            raise Refused(f"the evidence's {name} is not base64url") from None
    return decoded


def attestation_key(ak_bytes):
    """The AK's public area, checked to be a restricted P-256 ECDSA signing key made in its TPM and never leaving it."""
    area = tpm_public(ak_bytes, "attestation key")
    need = FIXED_TPM | FIXED_PARENT | SENSITIVE_DATA_ORIGIN | RESTRICTED | SIGN
    if area["attributes"] & need != need or area["attributes"] & DECRYPT or area["nameAlg"] != TPM_ALG_SHA256:
        raise Refused("the attestation key is not a restricted signing key made in its TPM (fixedTPM, fixedParent)")
    p256_key(area, "attestation key")
    return area


def ek_public(ek_bytes, certificate):
    """The EK's public area, checked to be the TCG template L-1's and the key `certificate` names."""
    area = tpm_public(ek_bytes, "endorsement key")
    if (area["type"], area["nameAlg"], area["attributes"], area["authPolicy"], area["symmetric"], area["scheme"],
            area.get("keyBits")) != (TPM_ALG_RSA, TPM_ALG_SHA256, EK_L1_ATTRIBUTES, EK_L1_POLICY,
                                 (TPM_ALG_AES, 128, TPM_ALG_CFB), (TPM_ALG_NULL,), 2048):
        raise Refused("the endorsement key is not the TCG's RSA-2048 template L-1")
    key = certificate.public_key()
    numbers = rsa.RSAPublicNumbers(area["exponent"] or 65537, int.from_bytes(area["n"], "big"))
    if not isinstance(key, rsa.RSAPublicKey) or key.public_numbers() != numbers:
        raise Refused("the endorsement key is not the one its certificate names")
    return area


def ek_certificate(der, authorities, now):
    """The EK certificate, checked to chain to a self-signed certificate among `authorities` through others of them."""
    try:
        return chained(der, authorities, now)
    except Refused:
        raise
    except Exception as error:  # cryptography parses lazily, and fails in several ways on what it loaded
        raise Refused(f"the EK certificate cannot be read ({type(error).__name__})") from None


def chained(der, authorities, now):
    """`ek_certificate`'s checks, which may raise what cryptography raises on a malformed certificate."""
    if len(der) < 4 or der[0] != 0x30:
        raise Refused("the EK certificate is not DER")
    if der[1] < 0x80:  # a TPM's NV index may hold padding after the certificate
        der = der[:2 + der[1]]
    else:
        count = der[1] & 0x7F
        der = der[:2 + count + int.from_bytes(der[2:2 + count], "big")]
    try:
        certificate = x509.load_der_x509_certificate(der)
    except ValueError:
        raise Refused("the EK certificate is not an X.509 certificate") from None
    try:
        usage = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        if TCG_KP_EK_CERTIFICATE not in usage:
            raise Refused("the EK certificate's extended key usage is not tcg-kp-EKCertificate")
    except x509.ExtensionNotFound:
        pass
    current, seen = certificate, 0
    while True:
        issuers = [authority for authority in authorities if authority.subject == current.issuer]
        if not issuers or seen > len(authorities):
            raise Refused(f"the EK certificate does not chain to a CA given with --ca (issuer {current.issuer.rfc4514_string()})")
        issuer = issued(current, issuers, now)
        if issuer.subject == issuer.issuer:
            return certificate
        current, seen = issuer, seen + 1


def issued(certificate, issuers, now):
    """The one of `issuers` (same subject) that signed `certificate`: a CA, allowed to sign certificates, all valid at `now`."""
    when = datetime.datetime.utcfromtimestamp(now)
    if not certificate.not_valid_before <= when <= certificate.not_valid_after:
        raise Refused(f"the certificate of {certificate.subject.rfc4514_string()} is not valid now")
    for issuer in issuers:
        key = issuer.public_key()
        try:
            if isinstance(key, rsa.RSAPublicKey):
                key.verify(certificate.signature, certificate.tbs_certificate_bytes, padding.PKCS1v15(),
                           certificate.signature_hash_algorithm)
            elif isinstance(key, ec.EllipticCurvePublicKey):
                key.verify(certificate.signature, certificate.tbs_certificate_bytes, ec.ECDSA(certificate.signature_hash_algorithm))
            else:
                continue
        except (InvalidSignature, TypeError, ValueError):
            continue
        try:
            authority = issuer.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        except x509.ExtensionNotFound:
            authority = False
        try:
            authority = authority and issuer.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
        except x509.ExtensionNotFound:
            pass
        if not authority:
            raise Refused(f"{issuer.subject.rfc4514_string()} is no CA that signs certificates")
        if not issuer.not_valid_before <= when <= issuer.not_valid_after:
            raise Refused(f"the CA certificate of {issuer.subject.rfc4514_string()} is not valid now")
        return issuer
    raise Refused(f"no CA given with --ca signed the certificate of {certificate.subject.rfc4514_string()}")


def kdfa(key, label, context_u, bits):
    """KDFa with HMAC-SHA-256 (TPM 2.0 Part 1 §11.4.10.2): the label with its terminating zero, no contextV."""
    out, counter = b"", 1
    while len(out) * 8 < bits:
        out += hmac.new(key, struct.pack(">I", counter) + label + b"\0" + context_u + struct.pack(">I", bits), "sha256").digest()
        counter += 1
    return out[:bits // 8]


def make_credential(ek_area, ek_key, name, secret):
    """TPM2_MakeCredential in software: `secret` sealed so that only the TPM holding the EK (RSA, AES-128-CFB,
    SHA-256) and the object `name` can open it. The TPM2B_ID_OBJECT's and TPM2B_ENCRYPTED_SECRET's contents."""
    seed = os.urandom(32)
    encrypted_seed = ek_key.encrypt(seed, padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(),
                                                       label=b"IDENTITY\0"))
    symmetric = kdfa(seed, b"STORAGE", name, ek_area["symmetric"][1])
    integrity = kdfa(seed, b"INTEGRITY", b"", 256)
    encryptor = Cipher(algorithms.AES(symmetric), modes.CFB(b"\0" * 16)).encryptor()
    identity = encryptor.update(struct.pack(">H", len(secret)) + secret) + encryptor.finalize()
    outer = hmac.new(integrity, identity + name, "sha256").digest()
    return struct.pack(">H", len(outer)) + outer + identity, encrypted_seed


def attested_entry(store, iss):
    """The device's attestation record: its enrolled AK and EK, and the challenge pending."""
    return store.setdefault("attestation", {}).setdefault(iss, {"ak": None, "ek": None, "challenge": None})


def attest_challenge(store, args, now):
    """A credential challenge for the AK in the evidence on stdin, once its EK certificate chains to a --ca."""
    shown = evidence(args.input)
    certificate = ek_certificate(shown["ekCert"], args.authorities, now)
    ek_area = ek_public(shown["ekPub"], certificate)
    attestation_key(shown["akPub"])
    entry = attested_entry(store, args.iss)
    if entry["ek"] is not None and entry["ek"] != b64url(shown["ekPub"]) and not args.replace:
        raise Refused("the device's attestation key was enrolled from another TPM (another EK): --replace to move it")
    secret = secrets.token_bytes(32)
    credential, encrypted_seed = make_credential(ek_area, certificate.public_key(), tpm_name(shown["akPub"]), secret)
    entry["challenge"] = {"ak": b64url(shown["akPub"]), "ek": b64url(shown["ekPub"]),
                          "secret": hashlib.sha256(secret).hexdigest(), "until": now + CHALLENGE_LIFETIME}
    return f"{b64url(credential)}.{b64url(encrypted_seed)}"


def attest_enrol(store, args, now):
    """Enrols the AK of the challenge pending for the device when the secret on stdin is what the TPM recovered from it."""
    entry = store.get("attestation", {}).get(args.iss)
    challenge = entry and entry["challenge"]
    if not challenge or challenge["until"] <= now:
        raise Refused("no credential challenge is pending for the device (attest-challenge), or it has expired")
    try:
        answer = base64.urlsafe_b64decode(args.input + "=" * (-len(args.input) % 4))
    except ValueError:
        answer = b""
    if not hmac.compare_digest(hashlib.sha256(answer).hexdigest(), challenge["secret"]):
        raise Refused("the secret is not the one the challenge sealed: its TPM does not hold that EK and attestation key")
    entry.update(ak=challenge["ak"], ek=challenge["ek"], challenge=None)
    name = b64url(tpm_name(base64.urlsafe_b64decode(entry["ak"] + "=" * (-len(entry["ak"]) % 4))))
    return f"enrolled attestation key {name} for {args.iss}"


def attest_check(store, args, now):
    """The kid of the device's key that the evidence on stdin proves lives in the TPM of the enrolled AK."""
    shown = evidence(args.input)
    entry = store.get("attestation", {}).get(args.iss)
    if not entry or entry["ak"] is None:
        raise Refused("no attestation key is enrolled for the device (attest-challenge, attest-enrol)")
    if entry["ak"] != b64url(shown["akPub"]):
        raise Refused("the evidence is signed by another attestation key than the one enrolled for the device")
    device = store["devices"].get(args.iss)
    if device is None or args.nonce not in device["nonces"]:
        raise Refused("the nonce was not issued here for this device, or was used, or has expired")
    del device["nonces"][args.nonce]
    ak = p256_key(attestation_key(shown["akPub"]), "attestation key")
    reader = TPMReader(shown["sig"], "signature")
    if reader.u16() != TPM_ALG_ECDSA or reader.u16() != TPM_ALG_SHA256:
        raise Refused("the attestation's signature is not ECDSA with SHA-256")
    r, s = reader.sized(), reader.sized()
    reader.end()
    if len(r) > 32 or len(s) > 32:
        raise Refused("the attestation's signature is not a P-256 one")
    try:
        ak.verify(encode_dss_signature(int.from_bytes(r, "big"), int.from_bytes(s, "big")), shown["certInfo"],
                  ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise Refused("the attestation's signature does not verify by the enrolled attestation key") from None
    reader = TPMReader(shown["certInfo"], "attestation")
    magic, kind, signer, extra = reader.u32(), reader.u16(), reader.sized(), reader.sized()
    reader.take(8 + 4 + 4 + 1 + 8)  # clockInfo, firmwareVersion
    if magic != TPM_GENERATED_VALUE:
        raise Refused("the attestation is not one the TPM made (magic is not TPM_GENERATED_VALUE)")
    if kind != TPM_ST_ATTEST_CERTIFY:
        raise Refused("the attestation is not a TPM2_Certify (type is not TPM_ST_ATTEST_CERTIFY)")
    name, _ = reader.sized(), reader.sized()
    reader.end()
    if not hmac.compare_digest(extra, args.nonce.encode()):
        raise Refused("the attestation is for another nonce (extraData)")
    ek_name = tpm_name(base64.urlsafe_b64decode(entry["ek"] + "=" * (-len(entry["ek"]) % 4)))
    if signer != qualified_name(qualified_name(struct.pack(">I", TPM_RH_ENDORSEMENT), ek_name), tpm_name(shown["akPub"])):
        raise Refused("the attestation key is not the one under the enrolled endorsement key (qualifiedSigner)")
    if name != tpm_name(shown["pubArea"]):
        raise Refused("the certified Name is not the hash of pubArea: pubArea is not the key the TPM certified")
    area = tpm_public(shown["pubArea"], "certified key")
    need = FIXED_TPM | FIXED_PARENT | SENSITIVE_DATA_ORIGIN | SIGN
    if area["attributes"] & need != need or area["attributes"] & (RESTRICTED | DECRYPT):
        raise Refused("the certified key was not made in the TPM to stay there (fixedTPM, fixedParent, sensitiveDataOrigin)")
    if area["nameAlg"] != TPM_ALG_SHA256 or area["scheme"] not in ((TPM_ALG_ECDSA, TPM_ALG_SHA256), (TPM_ALG_NULL,)):
        raise Refused("the certified key is not an ECDSA P-256 key with SHA-256")
    p256_key(area, "certified key")
    kid = thumbprint({"crv": "P-256", "kty": "EC", "x": b64url(area["x"].rjust(32, b"\0")), "y": b64url(area["y"].rjust(32, b"\0"))})
    if not any(record["jwk"]["kid"] == kid and record["retired"] is None for record in device["keys"]):
        raise Refused(f"the certified key {kid} is not the key enrolled for the device")
    return f"attested {kid}"


def main():
    """Runs one subcommand against the store."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="the JSON file of enrolled devices, used jti's and issued nonces")
    parser.add_argument("--ca", action="append", default=[], metavar="PEM",
                        help="a CA certificate of TPM makers trusted for EK certificates (root and intermediates), for attest-challenge")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--now", type=int, metavar="SECONDS", help="take this as the time (epoch seconds), for tests")
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("enrol", parents=[common], help="trust a device's key from `geolocate key show`")
    command.add_argument("keys", metavar="KEYS_FILE")
    command.add_argument("--iss", help="the device id, for a bare JWK Set")
    command.add_argument("--replace", action="store_true", help="drop the keys the device was enrolled with")
    commands.add_parser("nonce", parents=[common], help="issue a nonce for a login").add_argument("iss", metavar="ISS")
    command = commands.add_parser("check", parents=[common], help="check a token on stdin; print its claims")
    command.add_argument("audience", metavar="AUDIENCE")
    command.add_argument("--accept-replay", action="store_true", help="accept locations from replayed NMEA logs")
    commands.add_parser("rotate", parents=[common], help="follow a key rotation statement on stdin")
    command = commands.add_parser("attest-challenge", parents=[common],
                                  help="check the EK certificate of the attestation on stdin; print a credential challenge for its AK")
    command.add_argument("iss", metavar="ISS")
    command.add_argument("--replace", action="store_true", help="accept an AK from another TPM than the one enrolled")
    commands.add_parser("attest-enrol", parents=[common],
                        help="enrol the AK whose TPM answered the challenge with the secret on stdin").add_argument("iss", metavar="ISS")
    command = commands.add_parser("attest-check", parents=[common],
                                  help="check the attestation on stdin for a nonce issued here; print the attested kid")
    command.add_argument("iss", metavar="ISS")
    command.add_argument("nonce", metavar="NONCE")
    args = parser.parse_args()
    if args.command == "attest-challenge" and not args.ca:
        parser.error("attest-challenge needs --ca, the CA certificates trusted for EK certificates")
    now = time.time() if args.now is None else args.now
    try:
        args.authorities = []
        for path in args.ca:
            with open(path, "rb") as file:
                try:
                    args.authorities.append(x509.load_pem_x509_certificate(file.read()))
                except ValueError as error:
                    raise Unusable(f"{path}: not a PEM certificate ({error})") from None
        # read before the store is locked
        args.input = stdin_text() if args.command in ("check", "rotate", "attest-challenge", "attest-enrol", "attest-check") else None
        with opened(args.store) as store:
            prune(store, now)
            print({"enrol": enrol, "nonce": nonce, "check": check, "rotate": rotate, "attest-challenge": attest_challenge,
                   "attest-enrol": attest_enrol, "attest-check": attest_check}[args.command](store, args, now))
    except (OSError, Unusable) as error:
        print(f"verify.py: {error}", file=sys.stderr)
        sys.exit(2)
    except (Refused, jwt.PyJWTError, ValueError) as error:
        sys.exit(f"refused: {error}")
    except (KeyError, TypeError, AttributeError) as error:
        sys.exit(f"refused: malformed input ({error!r})")
    except RecursionError:
        sys.exit("refused: malformed input (nested too deeply)")


if __name__ == "__main__":
    main()
