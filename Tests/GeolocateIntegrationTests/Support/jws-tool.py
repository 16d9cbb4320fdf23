#!/usr/bin/env python3
"""What the token tests ask of an independent JOSE implementation (PyJWT, cryptography).

  thumbprints JWKS_FILE          each key's RFC 7638 thumbprint (OKP or EC), computed here, one per line
  pem-keys PEM_FILE              each PEM public key's raw bytes, base64url, one per line
  forge KIND TOKEN JWKS_FILE     TOKEN's claims under a forged token: none | hs256-pem |
                                 hs256-x | embedded-jwk (a new key's signature, its jwk in
                                 the header, the enrolled kid)
  decode TOKEN JWKS_FILE         the claims of TOKEN verified with the JWKS's first key (EdDSA
                                 or ES256, as the key's type says), no audience or time checks
                                 (rotation statements, golden tokens)
"""
import base64, hashlib, hmac, json, sys
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def segment(obj):
    return b64(json.dumps(obj, separators=(",", ":")).encode())


def main(command, *args):
    if command == "thumbprints":
        for key in json.load(open(args[0]))["keys"]:
            required = ("crv", "kty", "x", "y") if key["kty"] == "EC" else ("crv", "kty", "x")
            members = json.dumps({name: key[name] for name in required}, separators=(",", ":"), sort_keys=True)
            print(b64(hashlib.sha256(members.encode()).digest()))
    elif command == "pem-keys":
        text = open(args[0]).read()
        for block in text.split("-----END PUBLIC KEY-----")[:-1]:
            key = serialization.load_pem_public_key((block + "-----END PUBLIC KEY-----").encode())
            print(b64(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)))
    elif command == "forge":
        kind, token, jwks = args[0], args[1], json.load(open(args[2]))
        claims = json.loads(unb64(token.split(".")[1]))
        enrolled = jwks["keys"][0]
        if kind == "none":
            print(segment({"alg": "none", "typ": "JWT"}) + "." + segment(claims) + ".")
        elif kind in ("hs256-pem", "hs256-x"):
            public = jwt.PyJWK.from_dict(enrolled).key
            secret = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo) \
                if kind == "hs256-pem" else unb64(enrolled["x"])
            signing_input = segment({"alg": "HS256", "kid": enrolled["kid"], "typ": "JWT"}) + "." + segment(claims)
            print(signing_input + "." + b64(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()))
        elif kind == "embedded-jwk":
            attacker = Ed25519PrivateKey.generate()
            x = b64(attacker.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))
            header = {"alg": "EdDSA", "jwk": {"crv": "Ed25519", "kty": "OKP", "x": x}, "kid": enrolled["kid"], "typ": "JWT"}
            signing_input = segment(header) + "." + segment(claims)
            print(signing_input + "." + b64(attacker.sign(signing_input.encode())))
        else:
            sys.exit(f"unknown forgery {kind}")
    elif command == "decode":
        enrolled = json.load(open(args[1]))["keys"][0]
        key = jwt.PyJWK.from_dict(enrolled).key
        algorithm = "ES256" if enrolled["kty"] == "EC" else "EdDSA"  # the enrolled key's, never the token's
        print(json.dumps(jwt.decode(args[0], key, algorithms=[algorithm], options={"verify_aud": False, "verify_exp": False})))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(*sys.argv[1:])
