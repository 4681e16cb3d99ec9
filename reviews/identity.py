"""Who a commit names: the reviewer, the proposing agent, or the bot (never a secret)."""

from __future__ import annotations

from email.utils import parseaddr
from typing import Any

from django.conf import settings

from memoryadmin.audit import Actor


def bot_identity() -> tuple[str, str]:
    name, email = parseaddr(settings.REVIEW_BOT_IDENTITY)
    return name or "memoryadmin", email or "bot@localhost"


def _user_identity(user: Any) -> tuple[str, str]:
    username = user.get_username()
    name = user.get_full_name().strip() if hasattr(user, "get_full_name") else ""
    email = getattr(user, "email", "") or f"{username}@users.memoryadmin.invalid"
    return name or username, email


def commit_identity(actor: Actor) -> tuple[str, str]:
    """The commit author: the person acting (a personal token's creator), else the bot
    identity (team tokens and the system)."""
    user = actor.person
    if user is None:
        return bot_identity()
    return _user_identity(user)


def reviewer_username(actor: Actor) -> str | None:
    user = actor.person
    return user.get_username() if user is not None else None


def agent_identity(*, token: Any = None, user: Any = None, label: str = "") -> tuple[str, str]:
    """The commit author of imported proposals: the agent (token) that sent them, else the
    signed-in user who uploaded the bundle."""
    if token is not None:
        return f"{token.name} (agent)", f"token-{token.prefix}@agents.memoryadmin.invalid"
    if user is not None:
        return _user_identity(user)
    return bot_identity() if not label else (label, "agent@memoryadmin.invalid")
