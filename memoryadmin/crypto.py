"""Encryption at rest for stored credentials (source tokens, repository keys, webhook secrets)."""

from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


def _fernet() -> Fernet:
    key = settings.CREDENTIALS_KEY
    if key:
        return Fernet(key.encode())
    # Derived from SECRET_KEY unless MEMORYADMIN_CREDENTIALS_KEY is set; rotating either
    # makes stored credentials unreadable, which the UI reports as "credential must be re-entered".
    digest = hashlib.sha256(("memoryadmin-credentials:" + settings.SECRET_KEY).encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode("utf-8")).decode("ascii") if plaintext else ""


def decrypt(ciphertext: str) -> str:
    if not ciphertext:
        return ""
    try:
        return _fernet().decrypt(ciphertext.encode("ascii")).decode("utf-8")
    except InvalidToken as exc:
        raise ValueError("stored credential cannot be decrypted with the current key") from exc
