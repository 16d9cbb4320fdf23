#!/usr/bin/python3
"""A risk server's check of geolocate location tokens, with PyJWT (Debian: python3-jwt python3-cryptography).

usage: verify.py --store FILE enrol KEYS_FILE [--iss ID] [--replace]
       verify.py --store FILE nonce ISS
       verify.py --store FILE check AUDIENCE [--accept-replay] [--now SECONDS] < TOKEN
       verify.py --store FILE rotate < STATEMENT
Refusals exit 1 with one line `refused: REASON` on stderr; usage errors and unusable files exit 2.
"""
import argparse, base64, contextlib, errno, fcntl, hashlib, json, math, os, secrets, stat, sys, tempfile, time
import jwt

MAX_SKEW = 60         # seconds between a token's iat and this server's clock, either way
NONCE_LIFETIME = 300  # seconds a nonce issued for a login stays usable
MAX_LIFETIME = 3600   # seconds from a token's iat to its exp (geolocate's signing.tokenLifetime is at most 1 h)
MAX_INPUT = 64 * 1024  # bytes of a token or statement on stdin
LOCK_WAIT = 10       # seconds a check waits for another one holding the store
FORBIDDEN_HEADERS = ("jwk", "jku", "x5u", "x5c")  # a token never names its own key


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


def thumbprint(jwk):
    """The RFC 7638 thumbprint of an Ed25519 public JWK, checked to be one."""
    if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519" or "d" in jwk:
        raise Refused("a key is not an Ed25519 public JWK")
    x = jwk.get("x")
    try:
        raw = base64.urlsafe_b64decode(x + "=" * (-len(x) % 4))
    except (TypeError, ValueError):
        raw = b""
    if len(raw) != 32 or base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != x:  # one key, one text, one kid
        raise Refused("a key's x is not the unpadded base64url of 32 bytes, in its canonical form")
    members = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": jwk["x"]}, separators=(",", ":"))
    kid = base64.urlsafe_b64encode(hashlib.sha256(members.encode()).digest()).rstrip(b"=").decode()
    if jwk.get("kid", kid) != kid:
        raise Refused("a key's kid is not its RFC 7638 thumbprint")
    return kid


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
    """Drops the jti's and nonces whose time has passed."""
    for device in store["devices"].values():
        device["jtis"] = {jti: exp for jti, exp in device["jtis"].items() if exp > now}
        device["nonces"] = {nonce: until for nonce, until in device["nonces"].items() if until > now}


def stdin_text():
    """What stdin holds, up to MAX_INPUT bytes."""
    data = sys.stdin.buffer.read(MAX_INPUT + 1)
    if len(data) > MAX_INPUT:
        raise Refused(f"the input is larger than {MAX_INPUT} bytes")
    return data.decode().strip()


def unverified(token, typ):
    """The header and claims of a compact EdDSA JWS of type `typ`, before any signature check."""
    header = jwt.get_unverified_header(token)
    if header.get("alg") != "EdDSA" or any(name in header for name in FORBIDDEN_HEADERS):
        raise Refused("not an EdDSA token that names its key by kid alone")
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
            return device, record
    raise Refused("signed by a key this store does not trust for the device")


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
    jwk = shown["keys"][0]
    jwk = {"crv": jwk.get("crv"), "kid": thumbprint(jwk), "kty": jwk.get("kty"), "x": jwk.get("x")}
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
    value = secrets.token_urlsafe(24)
    store["devices"][args.iss]["nonces"][value] = now + NONCE_LIFETIME
    return value


def check(store, args, now):
    """The claims of a location token that passes every check, its jti and nonce then used up."""
    token = args.input
    header, claims = unverified(token, "JWT")
    device, record = trusted_key(store, header, claims)
    claims = jwt.decode(token, jwt.PyJWK.from_dict(record["jwk"]).key, algorithms=["EdDSA"], audience=args.audience,
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
    claims = jwt.decode(statement, jwt.PyJWK.from_dict(record["jwk"]).key, algorithms=["EdDSA"],
                        options={"require": ["iat", "iss", "jwk", "sub"], "verify_iat": False})
    jwk = claims["jwk"]
    if not isinstance(jwk, dict) or thumbprint(jwk) != claims["sub"] or type(claims["iat"]) is not int:
        raise Refused("the statement's sub is not the thumbprint of its jwk, or iat is not an integer")
    if any(known["jwk"]["kid"] == claims["sub"] for known in device["keys"]):
        raise Refused("the statement names a key this store already knows")
    record["retired"] = min(claims["iat"], now)  # tokens it signed until then are still in flight
    device["keys"].append({"enrolled": now, "jwk": {"crv": "Ed25519", "kid": claims["sub"], "kty": "OKP", "x": jwk["x"]},
                           "retired": None})
    return f"{claims['iss']} now signs with key {claims['sub']}; key {record['jwk']['kid']} is retired"


def main():
    """Runs one subcommand against the store."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="the JSON file of enrolled devices, used jti's and issued nonces")
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
    args = parser.parse_args()
    now = time.time() if args.now is None else args.now
    try:
        args.input = stdin_text() if args.command in ("check", "rotate") else None  # read before the store is locked
        with opened(args.store) as store:
            prune(store, now)
            print({"enrol": enrol, "nonce": nonce, "check": check, "rotate": rotate}[args.command](store, args, now))
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
