"""A source's credential: refused unless it can be sent as one HTTP header, stored encrypted
(memoryadmin.crypto), and scrubbed from every error text we keep."""

from __future__ import annotations

import json

from memoryadmin import crypto
from memoryadmin.errors import DomainError
from sources.fetchers import Credential
from sources.models import CredentialKind, Source


def credential_encrypt(credential: Credential) -> str:
    if credential.kind == CredentialKind.NONE or credential.header() is None:
        return ""
    payload = {"token": credential.token, "username": credential.username}
    payload["password"] = credential.password
    return crypto.encrypt(json.dumps(payload))


MAX_SECRET_CHARS = 4096
MAX_USERNAME_CHARS = 200


def _has_control(text: str) -> bool:
    return any(ord(char) < 0x20 or ord(char) == 0x7F for char in text)


class CredentialInvalid(DomainError):
    """A credential the source cannot use (field-keyed messages)."""

    code = "credential-invalid"


def credential_clean(credential: Credential) -> Credential:
    """Refuse a credential that cannot be sent as one HTTP header (field-keyed errors)."""
    errors: dict[str, str] = {}
    kind = credential.kind
    if kind not in CredentialKind.values:
        errors["credential_kind"] = "Choose none, bearer or basic."
    elif kind == CredentialKind.BEARER:
        if not credential.token:
            errors["token"] = "Enter the bearer token."  # noqa: S105 (a message, not a secret)
        elif len(credential.token) > MAX_SECRET_CHARS or _has_control(credential.token):
            errors["token"] = f"At most {MAX_SECRET_CHARS} characters, no control characters."
    elif kind == CredentialKind.BASIC:
        if not credential.username:
            errors["username"] = "Enter the user name."
        elif (
            len(credential.username) > MAX_USERNAME_CHARS
            or ":" in credential.username
            or _has_control(credential.username)
        ):
            errors["username"] = (
                f"At most {MAX_USERNAME_CHARS} characters, no colon or control characters."
            )
        if len(credential.password) > MAX_SECRET_CHARS or _has_control(credential.password):
            errors["password"] = f"At most {MAX_SECRET_CHARS} characters, no control characters."
    if errors:
        raise CredentialInvalid(errors)
    if kind == CredentialKind.BEARER:
        return Credential(kind=kind, token=credential.token)
    if kind == CredentialKind.BASIC:
        return Credential(kind=kind, username=credential.username, password=credential.password)
    return Credential()


def source_credential(source: Source) -> Credential:
    if not source.credential_encrypted:
        return Credential()
    data = json.loads(crypto.decrypt(source.credential_encrypted))
    return Credential(
        kind=source.credential_kind,
        token=data.get("token", ""),
        username=data.get("username", ""),
        password=data.get("password", ""),
    )


def scrub(text: str, credential: Credential) -> str:
    """Belt and braces: no error text we store may contain a secret."""
    for secret in (credential.token, credential.password, credential.header() or ""):
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text
