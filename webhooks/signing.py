"""Webhook signatures (no Django import): HMAC-SHA256 over "<timestamp>.<raw body>"."""

from __future__ import annotations

import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"  # noqa: S105 - a public marker, not a secret
SIGNATURE_SCHEME = "sha256"


def secret_generate() -> str:
    """256 bits of randomness, URL-safe, with a prefix that makes leaked secrets easy to grep."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signed_string(timestamp: int, body: bytes) -> bytes:
    return str(timestamp).encode("ascii") + b"." + body


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The value of the X-Memoryadmin-Signature header."""
    digest = hmac.new(secret.encode("utf-8"), signed_string(timestamp, body), hashlib.sha256)
    return f"{SIGNATURE_SCHEME}={digest.hexdigest()}"


def verify(
    secret: str, timestamp: int, body: bytes, header: str, *, now: int, tolerance: int = 300
) -> bool:
    """What a receiver does: constant-time compare and reject stale timestamps (replays)."""
    if abs(now - timestamp) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), header)
