#!/usr/bin/env python3
"""The risk server's kit (Examples/verify/verify.py) end to end, against real tokens from a geolocate binary.

Usage: verify-kit-test.py GEOLOCATE_BINARY

Prints one line per case (`ok: ...` or `FAIL: ...`), then `N passed, N failed`; exits 1 when any failed.
Needs PyJWT and cryptography (Debian: python3-jwt python3-cryptography).
"""
import base64, hashlib, json, os, shutil, subprocess, sys, tempfile, threading, time, tty
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
VERIFIER = os.path.join(ROOT, "Examples", "verify", "verify.py")
DRIVE = os.path.join(ROOT, "Examples", "nmea", "maynooth-drive.nmea")
AUD = "https://risk.example"
BINARY = os.path.abspath(sys.argv[1]) if len(sys.argv) == 2 else sys.exit(__doc__)
WORK = tempfile.mkdtemp(prefix="verify-kit-")
STORE = os.path.join(WORK, "server.store")
results = []
last = [""]  # what the verifier said last, shown when a case fails


def case(name, ok, detail=None):
    """Records and prints one case's outcome."""
    detail = last[0] if detail is None else detail
    results.append(ok)
    print(f"{'ok' if ok else 'FAIL'}: {name}" + ("" if ok else f" ({detail.strip()[:300]})"), flush=True)


def geolocate(state, *args):
    """Runs the binary with `state` as its state directory (and a config beside it); returns its stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GEOLOCATE_")}
    env.update(GEOLOCATE_STATE_DIR=state, GEOLOCATE_CONFIG=os.path.join(WORK, "config.json"))
    run = subprocess.run([BINARY, *args], env=env, capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        sys.exit(f"geolocate {' '.join(args)} exited {run.returncode}: {run.stderr}")
    return run.stdout.strip()


def verify(*args, stdin="", store=STORE):
    """Runs the verifier; returns (exit status, stdout + stderr)."""
    run = subprocess.run([sys.executable, VERIFIER, "--store", store, *args], input=stdin, capture_output=True, text=True)
    last[0] = f"exit {run.returncode}: {run.stdout + run.stderr}"
    return run.returncode, run.stdout + run.stderr


def token(state, *args, source=("--replay", DRIVE)):
    """A login token from the device at `state`."""
    return geolocate(state, "trigger", "login", *source, "--timeout", "10s", "--format", "jwt", "--audience", AUD, *args)


def claims(text):
    """A JWS's claims, unverified."""
    return jwt.decode(text, options={"verify_signature": False})


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def attacker_jwk(key):
    """An Ed25519 key's public JWK with its RFC 7638 kid."""
    x = b64(key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))
    kid = b64(hashlib.sha256(json.dumps({"crv": "Ed25519", "kty": "OKP", "x": x}, separators=(",", ":")).encode()).digest())
    return {"crv": "Ed25519", "kid": kid, "kty": "OKP", "x": x}


def signed(key, text, typ="JWT"):
    """A JWS of the claims `text`, raw JSON as written (NaN, Infinity, 1e400 too), signed by `key` under its kid."""
    header = b64(json.dumps({"alg": "EdDSA", "kid": attacker_jwk(key)["kid"], "typ": typ}).encode())
    body = header + "." + b64(text.encode())
    return body + "." + b64(key.sign(body.encode()))


def receiver():
    """A pseudo-terminal fed the drive's NMEA lines over and over, as a live receiver on a tty."""
    master, slave = os.openpty()
    tty.setraw(slave)
    lines = open(DRIVE, "rb").read().splitlines(keepends=True)

    def feed():
        while True:
            for line in lines:
                os.write(master, line)
                time.sleep(0.005)
    threading.Thread(target=feed, daemon=True).start()
    return ("--source", "nmea:" + os.ttyname(slave))


def refused(answer, word=""):
    """Whether the verifier refused, saying `word`."""
    status, text = answer
    return status == 1 and text.startswith("refused: ") and text.count("\n") == 1 and word in text


def main():
    state = os.path.join(WORK, "state")
    geolocate(state, "config", "set", "permissions", "fine")
    jwks = json.loads(geolocate(state, "key", "init"))
    iss = claims(token(state))["iss"]
    bare, shown = os.path.join(WORK, "bare.jwks"), os.path.join(WORK, "key-show.json")
    json.dump({"keys": jwks["keys"]}, open(bare, "w"))  # an older key show's bare JWK Set
    printed = json.loads(geolocate(state, "key", "show"))
    json.dump(printed if "iss" in printed else {"iss": iss, "keys": jwks["keys"]}, open(shown, "w"))  # older binaries: no iss
    case("key show names the device that signs", printed.get("iss", iss) == iss, str(printed))
    live = receiver()

    case("a bare JWK Set without --iss is refused", refused(verify("enrol", bare), "--iss"))
    answer = verify("enrol", shown)
    case("enrol from key show's output", answer[0] == 0 and jwks["keys"][0]["kid"] in answer[1], answer[1])
    case("enrolling the same key again changes nothing", verify("enrol", "--iss", iss, bare)[0] == 0)
    other = Ed25519PrivateKey.generate()
    stranger = os.path.join(WORK, "stranger.json")
    json.dump({"iss": iss, "keys": [attacker_jwk(other)]}, open(stranger, "w"))
    case("enrolling other keys for an enrolled device is refused", refused(verify("enrol", stranger), "rotation"))
    case("usage errors exit 2", verify("check")[0] == 2 and verify("nonce")[0] == 2 and verify("fly")[0] == 2)

    gate = token(state, source=live)
    case("a live token says src tty", claims(gate).get("src") == "tty", str(claims(gate).get("src")))
    answer = verify("check", AUD, stdin=gate)
    case("a gate token without nonce is accepted", answer[0] == 0 and json.loads(answer[1])["jti"] == claims(gate)["jti"], answer[1])
    case("the same token again is refused", refused(verify("check", AUD, stdin=gate), "used before"))

    nonce = verify("nonce", iss)[1].strip()
    with_nonce = token(state, "--nonce", nonce, source=live)
    case("a token with an issued nonce is accepted", verify("check", AUD, stdin=with_nonce)[0] == 0)
    again = token(state, "--nonce", nonce, source=live)
    case("a second token with that nonce is refused", refused(verify("check", AUD, stdin=again), "nonce"))
    forged_nonce = token(state, "--nonce", "made-up", source=live)
    case("a nonce never issued is refused", refused(verify("check", AUD, stdin=forged_nonce), "nonce"))
    case("a nonce for an unknown device is refused", refused(verify("nonce", "not-a-device")))

    replayed = token(state)
    case("a token from a replayed log is refused", refused(verify("check", AUD, stdin=replayed), "replay"))
    case("... and accepted with --accept-replay", verify("check", AUD, "--accept-replay", stdin=replayed)[0] == 0)
    fresh = token(state, source=live)
    case("a token for another audience is refused", refused(verify("check", "https://other.example", stdin=fresh), "audience"))
    iat = claims(fresh)["iat"]
    case("an expired token is refused", refused(verify("check", AUD, "--now", str(iat + 120), stdin=fresh), "expired"))
    case("an iat ahead of the server's clock is refused", refused(verify("check", AUD, "--now", str(iat - 61), stdin=fresh), "iat"))
    case("an iat 61 s behind it is refused", refused(verify("check", AUD, "--now", str(iat + 61), stdin=fresh), "iat"))
    payload = dict(claims(fresh), jti="forged-1")
    case("a token signed by the attacker's own key is refused",
         refused(verify("check", AUD, stdin=jwt.encode(payload, other, "EdDSA", {"kid": attacker_jwk(other)["kid"]})), "trust"))
    case("a token naming the trusted kid but carrying its own jwk is refused",
         refused(verify("check", AUD, stdin=jwt.encode(payload, other, "EdDSA",
                                                        {"kid": jwks["keys"][0]["kid"], "jwk": attacker_jwk(other)})), "kid alone"))
    case("a token signed by another key under the trusted kid is refused",
         refused(verify("check", AUD, stdin=jwt.encode(payload, other, "EdDSA", {"kid": jwks["keys"][0]["kid"]})), "ignature"))
    racers = [subprocess.Popen([sys.executable, VERIFIER, "--store", STORE, "check", AUD], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True) for _ in range(5)]
    for racer in racers:
        racer.stdin.write(fresh)
        racer.stdin.close()
    codes = sorted(racer.wait() for racer in racers)
    case("five checks of one token at once accept it once", codes == [0, 1, 1, 1, 1], str(codes))

    in_flight = token(state, source=live)
    old_state = os.path.join(WORK, "state-before-rotation")
    shutil.copytree(state, old_state)
    statement = geolocate(state, "key", "rotate")
    new_token = token(state, source=live)
    case("a new key's token is refused before the rotation is followed", refused(verify("check", AUD, stdin=new_token), "trust"))
    unknown = Ed25519PrivateKey.generate()
    forged = jwt.encode({"iat": int(time.time()), "iss": iss, "jwk": attacker_jwk(other), "sub": attacker_jwk(other)["kid"]},
                        unknown, "EdDSA", {"kid": attacker_jwk(unknown)["kid"], "typ": "key-rotation+jwt"})
    case("a rotation statement signed by an unknown key is refused", refused(verify("rotate", stdin=forged), "trust"))
    answer = verify("rotate", stdin=statement)
    case("the device's rotation statement is followed", answer[0] == 0, answer[1])
    case("the same statement again is refused", refused(verify("rotate", stdin=statement), "retired"))
    case("the new key's token is accepted", verify("check", AUD, stdin=new_token)[0] == 0)
    case("an old-key token signed before the rotation is accepted", verify("check", AUD, stdin=in_flight)[0] == 0)
    time.sleep(1.1)
    late = token(old_state, source=live)
    case("an old-key token signed after the rotation is refused", refused(verify("check", AUD, stdin=late), "retired"))
    stranger_state = os.path.join(WORK, "stranger")
    geolocate(stranger_state, "key", "init")
    case("another device's rotation statement is refused",
         refused(verify("rotate", stdin=geolocate(stranger_state, "key", "rotate")), "not enrolled"))
    case("a token as a rotation statement is refused", refused(verify("rotate", stdin=token(state, source=live)), "key-rotation"))

    hostile()
    failed = results.count(False)
    print(f"{len(results) - failed} passed, {failed} failed")
    shutil.rmtree(WORK, ignore_errors=True)
    sys.exit(1 if failed else 0)


def hostile():
    """Tokens, statements, key files and store files made by hand, with claims geolocate never writes."""
    store = os.path.join(WORK, "forger.store")
    first, second = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    keys = os.path.join(WORK, "forger.json")
    json.dump({"iss": "forger", "keys": [attacker_jwk(first)]}, open(keys, "w"))
    verify("enrol", keys, store=store)
    now = int(time.time())

    def made(key, iat, exp, jti, extra=""):
        return signed(key, f'{{"aud":"{AUD}","exp":{exp},"iat":{iat},"iss":"forger","jti":"{jti}","loc":{{}}{extra}}}')

    def check(text, where=store):
        return verify("check", AUD, stdin=text, store=where)
    case("a hand-made token with integer times is accepted", check(made(first, now, now + 60, "plain"))[0] == 0)
    new = attacker_jwk(second)
    rotation = signed(first, json.dumps({"iat": now - 5, "iss": "forger", "jwk": new, "sub": new["kid"]}), "key-rotation+jwt")
    case("a hand-made rotation statement is followed", verify("rotate", stdin=rotation, store=store)[0] == 0)
    case("a retired key's token with iat NaN is refused", refused(check(made(first, "NaN", now + 60, "nan-iat")), "integer"))
    for number, (iat, exp, extra) in enumerate((("true", now + 60, ""), (f"{now}.5", now + 60, ""), (now, "NaN", ""),
                                                (now, "Infinity", ""), (now, "1e400", ""), (now, now + 60, ',"nbf":1.5'),
                                                (now, now + 60, ',"nbf":NaN'))):
        name = f"iat {iat}" if number < 2 else f"exp {exp}" if number < 5 else extra.strip(",")
        case(f"a token with {name.replace(str(now), 'NOW')} is refused", refused(check(made(second, iat, exp, f"odd-{number}", extra)), "integer"))
    case("a token living more than an hour is refused", refused(check(made(second, now, now + 3601, "long")), "lives"))
    case("... one living an hour is accepted", check(made(second, now, now + 3600, "hour"))[0] == 0)
    kept = json.loads(open(store).read(), parse_constant=str)["devices"]["forger"]["jtis"]  # NaN, Infinity as text
    case("the store keeps integer exp's only", all(type(exp) is int for exp in kept.values()), str(kept))
    third = attacker_jwk(Ed25519PrivateKey.generate())
    nan_rotation = signed(second, f'{{"iat":NaN,"iss":"forger","jwk":{json.dumps(third)},"sub":"{third["kid"]}"}}', "key-rotation+jwt")
    case("a rotation statement with iat NaN is refused", refused(verify("rotate", stdin=nan_rotation, store=store), "integer"))

    big = made(second, now, now + 60, "big", ',"pad":"' + "x" * 70000 + '"')
    case("a token larger than 64 KiB is refused", refused(check(big), "larger than"))
    case("... and so is a statement", refused(verify("rotate", stdin="x" * 70000, store=store), "larger than"))

    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    x = new["x"]
    for name, odd in (("padded", x + "="), ("with a spare bit set", x[:-1] + alphabet[alphabet.index(x[-1]) ^ 1])):
        json.dump({"iss": f"odd-x {name}", "keys": [{"crv": "Ed25519", "kty": "OKP", "x": odd}]}, open(keys, "w"))
        case(f"enrolling an x {name} is refused", refused(verify("enrol", keys, store=store), "canonical"))
    twin = {"crv": "Ed25519", "kty": "OKP", "x": x[:-1] + alphabet[alphabet.index(x[-1]) ^ 1]}
    twin_kid = b64(hashlib.sha256(json.dumps(twin, separators=(",", ":")).encode()).digest())
    twin_rotation = signed(second, json.dumps({"iat": now, "iss": "forger", "jwk": twin, "sub": twin_kid}), "key-rotation+jwt")
    case("a rotation to the same key under a non-canonical x is refused",
         refused(verify("rotate", stdin=twin_rotation, store=store), "canonical"))

    bad = os.path.join(WORK, "bad.store")
    for content in ("{bad", "[]", '{"devices":[]}', "", '{"devices":{"forger":{"keys":[],"jtis":{"j":NaN},"nonces":{}}}}'):
        open(bad, "w").write(content)
        status, text = check(made(second, now, now + 60, "bad-store"), bad)
        case(f"a store holding {content!r} exits 2 naming it", status == 2 and text.count("\n") == 1 and bad in text
             and "refused" not in text, text)
    linked, elsewhere = os.path.join(WORK, "linked.store"), os.path.join(WORK, "elsewhere")
    shutil.copy(store, elsewhere)
    os.symlink(elsewhere, linked)
    status, text = verify("nonce", "forger", store=linked)
    case("a store that is a symbolic link exits 2 naming it",
         status == 2 and linked + ":" in text and "symbolic link" in text and os.path.islink(linked), text)
    locked, lock_target = os.path.join(WORK, "locked.store"), os.path.join(WORK, "lock-target")
    shutil.copy(store, locked)
    os.symlink(lock_target, locked + ".lock")
    status, text = verify("nonce", "forger", store=locked)
    case("a lock file that is a symbolic link exits 2 naming it",
         status == 2 and locked + ".lock" in text and not os.path.exists(lock_target), text)


if __name__ == "__main__":
    main()
