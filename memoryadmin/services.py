"""Every write to teams, memberships and tokens goes through here."""

from __future__ import annotations

import re
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import ApiToken, Membership, Role, Scope, Team, token_hash

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

TEAM_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
TOKEN_PREFIX = "ma_"  # noqa: S105 - a public marker, not a secret


@transaction.atomic
def team_create(*, actor: Actor, slug: str, name: str = "") -> Team:
    if not TEAM_SLUG.fullmatch(slug) or len(slug) > 64:
        raise ValidationError({"slug": "Use lowercase letters, digits and hyphens."})
    if Team.objects.filter(slug=slug).exists():
        raise ValidationError({"slug": f"A team '{slug}' already exists."})
    team = Team.objects.create(slug=slug, name=name or slug)
    audit_record(
        actor=actor, action="team.create", team=team, target=team, summary=f"Created team {slug}"
    )
    return team


@transaction.atomic
def membership_set(*, actor: Actor, team: Team, user: AbstractBaseUser, role: str) -> Membership:
    if role not in Role.values:
        raise ValidationError({"role": f"Role must be one of {', '.join(Role.values)}."})
    if role != Role.ADMIN:
        _keep_an_admin(team=team, leaving=user)
    membership, created = Membership.objects.update_or_create(
        team=team, user=user, defaults={"role": role}
    )
    audit_record(
        actor=actor,
        action="membership.set",
        team=team,
        target=membership,
        summary=f"{user.get_username()} is now {role} of {team.slug}",
        data={"user": user.get_username(), "role": role, "created": created},
    )
    return membership


def _keep_an_admin(*, team: Team, leaving: AbstractBaseUser) -> None:
    """A team must keep at least one admin, or nobody could manage it again from the UI."""
    admins = Membership.objects.select_for_update().filter(team=team, role=Role.ADMIN)
    if not admins.exclude(user=leaving).exists() and admins.filter(user=leaving).exists():
        raise ValidationError(
            {"role": f"{leaving.get_username()} is the last admin of {team.slug}."}
        )


@transaction.atomic
def membership_remove(*, actor: Actor, membership: Membership) -> None:
    team, username = membership.team, membership.user.get_username()
    _keep_an_admin(team=team, leaving=membership.user)
    membership.delete()
    audit_record(
        actor=actor,
        action="membership.remove",
        team=team,
        target_type="memoryadmin.membership",
        target_id=username,
        summary=f"Removed {username} from {team.slug}",
        data={"user": username},
    )


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
    """Create a token and return it with its secret: the only time the secret exists in clear."""
    name = name.strip()
    if not name:
        raise ValidationError({"name": "Give the token a name."})
    scopes = _validate_scopes(scopes)
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
        created_by=actor.user,
        expires_at=timezone.now() + timedelta(days=expires_days) if expires_days else None,
    )
    audit_record(
        actor=actor,
        action="token.create",
        team=team,
        target=token,
        summary=f"Created API token {name}",
        data={"name": name, "prefix": prefix, "scopes": scopes, "expires_days": expires_days},
    )
    return token, secret


@transaction.atomic
def token_revoke(*, actor: Actor, token: ApiToken) -> ApiToken:
    token = ApiToken.objects.select_for_update().get(pk=token.pk)
    if token.revoked_at is not None:
        return token
    token.revoked_at = timezone.now()
    token.revoked_by = actor.user
    token.save(update_fields=["revoked_at", "revoked_by"])
    audit_record(
        actor=actor,
        action="token.revoke",
        team=token.team,
        target=token,
        summary=f"Revoked API token {token.name}",
        data={"prefix": token.prefix},
    )
    return token
