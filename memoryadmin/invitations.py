"""Invitations: an admin invites an e-mail address with a role; the link joins the team once.

The link's secret exists in clear only when it is made (shown once, e-mailed); the table keeps
its SHA-256 like an API token's. Every step is audited.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from memoryadmin import services
from memoryadmin.audit import Actor, audit_record
from memoryadmin.errors import Conflict, NotFound
from memoryadmin.models import Invitation, Membership, Role, Scope, Team, token_hash
from memoryadmin.permissions import actor_require

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

logger = logging.getLogger(__name__)

INVITE_PREFIX = "inv_"


class InvitationPending(Conflict):
    code = "invitation-pending"


class AlreadyMember(Conflict):
    code = "already-member"


class InvitationClosed(Conflict):
    """The link was used, revoked or has expired (its `code` says which)."""

    code = "invitation-closed"


class InvitationUnknown(NotFound):
    code = "invitation-unknown"


@transaction.atomic
def invitation_create(
    *,
    actor: Actor,
    team: Team,
    email: str,
    role: str,
    link: Callable[[str], str],
    expires_days: int | None = None,
) -> tuple[Invitation, str]:
    """Invite `email` as `role`; return the invitation and its link (the only time it exists).

    `link(secret)` makes the absolute accept URL; the mail goes out after commit."""
    actor_require(actor, team, Scope.TEAM_MANAGE)
    email = email.strip().lower()
    if role not in Role.values:
        raise ValidationError({"role": f"Role must be one of {', '.join(Role.values)}."})
    if not email or "@" not in email:
        raise ValidationError({"email": "Enter an e-mail address."})
    if Membership.objects.filter(team=team, user__email__iexact=email).exists():
        raise AlreadyMember({"email": f"{email} is already a member of {team.name}."})
    pending = Invitation.objects.select_for_update().filter(
        Invitation.state_q("pending"), team=team, email__iexact=email
    )
    if pending.exists():
        raise InvitationPending(
            {"email": f"{email} already has a pending invitation; revoke it to send a new one."}
        )
    secret = f"{INVITE_PREFIX}{secrets.token_urlsafe(32)}"
    days = expires_days or settings.MEMORYADMIN_INVITATION_DAYS
    invitation = Invitation.objects.create(
        team=team,
        email=email,
        role=role,
        secret_hash=token_hash(secret),
        invited_by=actor.person,
        expires_at=timezone.now() + timedelta(days=days),
    )
    audit_record(
        actor=actor,
        action="invitation.create",
        team=team,
        target=invitation,
        summary=f"Invited {email} as {role} of {team.slug}",
        data={"email": email, "role": role, "expires_at": invitation.expires_at.isoformat()},
    )
    url = link(secret)
    transaction.on_commit(lambda: _invitation_mail(invitation, url, actor.label))
    return invitation, url


def _invitation_mail(invitation: Invitation, url: str, inviter: str) -> None:
    """Send the invitation; a mail failure leaves the invitation (the admin copies the link)."""
    team = invitation.team
    body = (
        f"{inviter} invites you to join {team.name} on memoryadmin as {invitation.role}.\n\n"
        f"Accept the invitation (choose a username and password): {url}\n\n"
        f"The link works once and expires on {invitation.expires_at:%Y-%m-%d %H:%M %Z}."
    )
    try:
        send_mail(
            f"Join {team.name} on memoryadmin",
            body,
            settings.DEFAULT_FROM_EMAIL,
            [invitation.email],
        )
    except Exception:  # SMTP down or refused: the page showed the link to copy
        logger.warning("invitation %s: the mail could not be sent", invitation.pk, exc_info=True)


@transaction.atomic
def invitation_revoke(*, actor: Actor, invitation: Invitation) -> None:
    actor_require(actor, invitation.team, Scope.TEAM_MANAGE)
    invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if invitation.state != "pending":
        raise InvitationClosed(
            f"This invitation is {invitation.state}; only a pending one can be revoked.",
            code=f"invitation-{invitation.state}",
        )
    invitation.revoked_at = timezone.now()
    invitation.revoked_by = actor.person
    invitation.save(update_fields=["revoked_at", "revoked_by"])
    audit_record(
        actor=actor,
        action="invitation.revoke",
        team=invitation.team,
        target=invitation,
        summary=f"Revoked the invitation of {invitation.email}",
        data={"email": invitation.email, "role": invitation.role},
    )


def invitation_open(secret: str, *, lock: bool = False) -> Invitation:
    """The pending invitation a link names; refuses unknown, used, revoked and expired ones."""
    rows = Invitation.objects.select_related("team", "invited_by")
    if lock:
        rows = rows.select_for_update(of=("self",))
    invitation = rows.filter(secret_hash=token_hash(secret or "")).first()
    if invitation is None:
        raise InvitationUnknown("This invitation link is not valid.")
    state = invitation.state
    if state != "pending":
        messages = {
            "accepted": "This invitation was already used.",
            "revoked": "This invitation was revoked.",
            "expired": "This invitation has expired; ask for a new one.",
        }
        raise InvitationClosed(messages[state], code=f"invitation-{state}")
    return invitation


@transaction.atomic
def invitation_accept(
    *,
    secret: str,
    user: AbstractBaseUser | None = None,
    username: str = "",
    password: str = "",
) -> Membership:
    """Join the invitation's team: as `user` (signed in), or as a new account made here."""
    invitation = invitation_open(secret, lock=True)
    team = invitation.team
    if user is None:
        user = _account_create(username=username, password=password, email=invitation.email)
        audit_record(
            actor=Actor(user=user),
            action="user.create",
            team=team,
            target=user,
            summary=f"{user.get_username()} signed up through an invitation",
            data={"user": user.get_username(), "invitation": invitation.pk},
        )
    elif Membership.objects.filter(team=team, user=user).exists():
        raise AlreadyMember(f"You are already a member of {team.name}.")
    actor = Actor(user=user)
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    audit_record(
        actor=actor,
        action="invitation.accept",
        team=team,
        target=invitation,
        summary=f"{user.get_username()} accepted the invitation of {invitation.email}",
        data={"email": invitation.email, "role": invitation.role, "user": user.get_username()},
    )
    return services.membership_set(actor=actor, team=team, user=user, role=invitation.role)


def _account_create(*, username: str, password: str, email: str) -> AbstractBaseUser:
    model = get_user_model()
    username = username.strip()
    errors: dict[str, list[str]] = {}
    if not username:
        errors["username"] = ["Choose a username."]
    else:
        try:
            model._meta.get_field(model.USERNAME_FIELD).run_validators(username)
        except ValidationError as exc:
            errors["username"] = exc.messages
        if model.objects.filter(**{f"{model.USERNAME_FIELD}__iexact": username}).exists():
            errors["username"] = ["That username is taken."]
    candidate = model(**{model.USERNAME_FIELD: username, "email": email})
    try:
        validate_password(password, candidate)
    except ValidationError as exc:
        errors["password"] = exc.messages
    if errors:
        raise ValidationError(errors)
    candidate.set_password(password)
    candidate.save()
    return candidate
