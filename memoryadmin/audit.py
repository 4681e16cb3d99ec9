"""Who did what: the actor of a service call and the one helper that records audit events."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import models

from memoryadmin.models import ApiToken, AuditEvent, Team

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser
    from django.http import HttpRequest

# Set by RequestIdMiddleware so services deep in a call can stamp the request on events.
current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
current_ip: contextvars.ContextVar[str | None] = contextvars.ContextVar("ip", default=None)


@dataclass(frozen=True)
class Actor:
    """The user, token or system process on whose behalf a service acts."""

    user: AbstractBaseUser | None = None
    token: ApiToken | None = None

    @classmethod
    def system(cls) -> Actor:
        return cls()

    @classmethod
    def from_request(cls, request: HttpRequest) -> Actor:
        auth = getattr(request, "auth", None)
        if isinstance(auth, ApiToken):
            return cls(token=auth)
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            return cls(user=user)
        return cls()

    @property
    def label(self) -> str:
        if self.token is not None:
            return f"token:{self.token.name} ({self.token.prefix})"
        if self.user is not None:
            return f"user:{self.user.get_username()}"
        return "system"

    @property
    def is_system(self) -> bool:
        return self.user is None and self.token is None

    @property
    def person(self) -> AbstractBaseUser | None:
        """The person acting: the signed-in user, or the creator of a personal token. A team
        token and the system are no person."""
        if self.user is not None:
            return self.user
        if self.token is not None and self.token.is_personal:
            return self.token.created_by
        return None

    @property
    def approver_key(self) -> str | None:
        """One person, whether acting in the browser or through a token they created (`user:<id>`);
        None when no person acts (a team token, the system)."""
        person = self.person
        if person is None or person.pk is None:
            return None
        return f"user:{person.pk}"


def audit_event_build(
    *,
    actor: Actor,
    action: str,
    summary: str,
    team: Team | None = None,
    target: models.Model | None = None,
    target_type: str = "",
    target_id: str | int = "",
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    """One event, unsaved: its actor, target, summary and the request it came from. The one
    place an event's fields are filled, for audit_record and for writers that insert the row
    in a statement of their own (bundles.usage.counting.read_log_write)."""
    if target is not None:
        target_type = target_type or target._meta.label_lower
        target_id = target_id or str(target.pk)
    return AuditEvent(
        team=team,
        actor_user=actor.user,
        actor_token=actor.token,
        actor_label=actor.label,
        action=action,
        target_type=target_type,
        target_id=str(target_id),
        summary=summary[:500],
        data=data or {},
        ip_address=current_ip.get(),
        request_id=current_request_id.get(),
    )


def audit_record(
    *,
    actor: Actor,
    action: str,
    summary: str,
    team: Team | None = None,
    target: models.Model | None = None,
    target_type: str = "",
    target_id: str | int = "",
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one event. Call it inside the service's transaction so both land or neither."""
    event = audit_event_build(
        actor=actor,
        action=action,
        summary=summary,
        team=team,
        target=target,
        target_type=target_type,
        target_id=target_id,
        data=data,
    )
    event.save(force_insert=True)
    return event
