"""A server's check of a geolocate location token (SPEC 15), with PyJWT.

usage: verify.py JWKS_FILE AUDIENCE NONCE [--now SECONDS] < TOKEN
JWKS_FILE is what `geolocate key show` printed when the device was enrolled. Prints the
claims on success; exits 1 with the reason on stderr otherwise. Needs PyJWT >= 2.4 with
cryptography (Debian: python3-jwt python3-cryptography).
"""
import json, sys, time
import jwt

MAX_SKEW = 60    # seconds between the device's iat and this server's clock
seen_jti = set()  # a real server keeps each jti until its exp, in shared storage


def verify(token, jwks, audience, nonce, now=None):
    header = jwt.get_unverified_header(token)
    if header.get("alg") != "EdDSA" or "jwk" in header or "jku" in header:
        raise jwt.InvalidTokenError("not an EdDSA token with a kid of this device")
    keys = {key.key_id: key for key in jwt.PyJWKSet.from_dict(jwks).keys}
    if header.get("kid") not in keys:
        raise jwt.InvalidTokenError("signed by a key this device never enrolled")
    claims = jwt.decode(token, keys[header["kid"]].key, algorithms=["EdDSA"], audience=audience,
                        options={"require": ["aud", "exp", "iat", "iss", "jti", "loc"], "verify_exp": now is None})
    now = time.time() if now is None else now
    if claims["exp"] <= now:
        raise jwt.ExpiredSignatureError("the token has expired")
    if abs(now - claims["iat"]) > MAX_SKEW:
        raise jwt.InvalidTokenError("iat is too far from this server's clock")
    if claims.get("nonce") != nonce:
        raise jwt.InvalidTokenError("the nonce is not this login's")
    if claims["jti"] in seen_jti:
        raise jwt.InvalidTokenError("the token was used before")
    seen_jti.add(claims["jti"])
    return claims


if __name__ == "__main__":
    args = sys.argv[1:]
    now = float(args[args.index("--now") + 1]) if "--now" in args else None
    with open(args[0]) as file:
        jwks = json.load(file)
    try:
        print(json.dumps(verify(sys.stdin.read().strip(), jwks, args[1], args[2], now)))
    except jwt.PyJWTError as error:
        sys.exit(f"refused: {error}")
