"""API tokens: create (the secret exists in clear only then), revoke, and revoke a person's own."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from memoryadmin.audit import Actor, audit_record
from memoryadmin.errors import Forbidden
from memoryadmin.models import ApiToken, Scope, Team, TokenKind, token_hash
from memoryadmin.permissions import token_has_scope, token_scopes

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


TOKEN_PREFIX = "ma_"  # noqa: S105 - a public marker, not a secret


def _validate_scopes(scopes: list[str]) -> list[str]:
    unknown = sorted(set(scopes) - set(Scope.values))
    if unknown:
        raise ValidationError({"scopes": f"Unknown scopes: {', '.join(unknown)}."})
    if not scopes:
        raise ValidationError({"scopes": "Choose at least one scope."})
    return sorted(set(scopes))


@transaction.atomic
def token_create(
    *, actor: Actor, team: Team, name: str, scopes: list[str], expires_days: int | None = None
) -> tuple[ApiToken, str]:
    """Create a token and return it with its secret: the only time the secret exists in clear.

    A person's token is personal (it acts with at most their current role, and ends with their
    membership); the system's (`token_create` command) is a team token, owned by no one. A token
    with `team:manage` (POST /api/tokens/) creates a token of its own kind for its own person,
    granting only scopes it holds itself."""
    name = name.strip()
    if not name:
        raise ValidationError({"name": "Give the token a name."})
    scopes = _validate_scopes(scopes)
    if actor.token is not None:
        _token_may_create(actor.token, team, scopes)
    person = actor.person
    kind = TokenKind.PERSONAL if person is not None else TokenKind.TEAM
    if expires_days is not None and expires_days <= 0:
        raise ValidationError({"expires_days": "Expiry must be a positive number of days."})
    prefix = secrets.token_hex(4)
    secret = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(
        team=team,
        name=name,
        prefix=prefix,
        secret_hash=token_hash(secret),
        scopes=scopes,
        kind=kind,
        created_by=person,
        expires_at=timezone.now() + timedelta(days=expires_days) if expires_days else None,
    )
    audit_record(
        actor=actor,
        action="token.create",
        team=team,
        target=token,
        summary=f"Created API token {name}",
        data={
            "name": name,
            "prefix": prefix,
            "scopes": scopes,
            "expires_days": expires_days,
            "kind": kind,
        },
    )
    return token, secret


def _token_may_create(token: ApiToken, team: Team, scopes: list[str]) -> None:
    if token.team_id != team.pk or not token_has_scope(token, Scope.TEAM_MANAGE):
        raise PermissionDenied(f"this token lacks the '{Scope.TEAM_MANAGE}' scope on this team")
    beyond = sorted(set(scopes) - token_scopes(token))
    if beyond:
        error = Forbidden(
            f"A token can grant only scopes it holds itself; not: {', '.join(beyond)}.",
            code="scope-beyond-token",
        )
        error.details = {"scopes": beyond}
        raise error


@transaction.atomic
def token_revoke(*, actor: Actor, token: ApiToken, reason: str = "") -> ApiToken:
    token = ApiToken.objects.select_for_update().get(pk=token.pk)
    if token.revoked_at is not None:
        return token
    token.revoked_at = timezone.now()
    token.revoked_by = actor.user
    token.save(update_fields=["revoked_at", "revoked_by"])
    data = {"prefix": token.prefix}
    if reason:
        data["reason"] = reason
    audit_record(
        actor=actor,
        action="token.revoke",
        team=token.team,
        target=token,
        summary=f"Revoked API token {token.name}" + (f" ({reason})" if reason else ""),
        data=data,
    )
    return token


def _revoke_personal_tokens(
    *, actor: Actor, user: AbstractBaseUser, teams: list[Team] | None, reason: str
) -> list[ApiToken]:
    """Revoke the active personal tokens a person made (on these teams, or all): one audit
    event each, in the caller's transaction."""
    tokens = ApiToken.objects.filter(
        created_by_id=user.pk, kind=TokenKind.PERSONAL, revoked_at__isnull=True
    )
    if teams is not None:
        tokens = tokens.filter(team__in=teams)
    return [
        token_revoke(actor=actor, token=token, reason=reason)
        for token in tokens.select_related("team").order_by("id")
    ]
