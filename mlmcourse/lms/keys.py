"""The tool's key pair: made once, the private half readable by its owner only, the public half
as the JWKS the LMS registers (it checks the tool's signed token requests against it)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

PRIVATE_KEY = "tool-private.pem"
JWKS = "jwks.json"
KEY_ID = "mlmcourse-tool-1"


class KeyFolderError(Exception):
    """The key folder is unsafe or its key unreadable (a clear message, never a silent key)."""


def ensure_keys(folder: Path) -> Path:
    """The private key's path, made (mode 0600) with its JWKS the first time only."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    private = folder / PRIVATE_KEY
    if not private.exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        descriptor = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(pem)
    check_private(private)
    if not (folder / JWKS).exists():  # (made with the key; made again from it if deleted)
        key = serialization.load_pem_private_key(private.read_bytes(), password=None)
        (folder / JWKS).write_text(json.dumps(public_jwks(key), indent=2) + "\n")
    return private


def check_private(private: Path) -> None:
    mode = stat.S_IMODE(private.stat().st_mode)
    if mode & 0o077:
        raise KeyFolderError(f"{private} is readable by others (mode {mode:o}); "
                        f"run: chmod 600 {private}")


def load_private(folder: Path):
    private = ensure_keys(folder)
    return serialization.load_pem_private_key(private.read_bytes(), password=None)


def public_jwks(private_key) -> dict:
    """{"keys": [the public key as a JWK, with its kid, alg RS256, use sig]}."""
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private_key.public_key()))
    jwk.update(kid=KEY_ID, alg="RS256", use="sig")
    return {"keys": [jwk]}
