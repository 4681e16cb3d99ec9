"""The one place that answers "may this user do X on this team"."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet

from memoryadmin.models import Membership, Role, Team

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser


class Action(StrEnum):
    VIEW = "view"  # read the team's sources, reviews, brain, audit
    REVIEW = "review"  # approve or reject proposals
    MANAGE = "manage"  # add/approve sources, repositories, tokens, imports


ROLE_ACTIONS: dict[str, frozenset[Action]] = {
    Role.VIEWER: frozenset({Action.VIEW}),
    Role.REVIEWER: frozenset({Action.VIEW, Action.REVIEW}),
    Role.ADMIN: frozenset({Action.VIEW, Action.REVIEW, Action.MANAGE}),
}


def role_of(user: AbstractBaseUser | AnonymousUser, team: Team) -> str | None:
    if not user.is_authenticated or user.pk is None:  # a token principal has no memberships
        return None
    if user.is_superuser:
        return Role.ADMIN
    cache: dict[int, str | None] = user.__dict__.setdefault("_team_roles", {})
    if team.pk not in cache:
        cache[team.pk] = (
            Membership.objects.filter(user=user, team=team).values_list("role", flat=True).first()
        )
    return cache[team.pk]


def user_can(user: AbstractBaseUser | AnonymousUser, team: Team, action: Action) -> bool:
    role = role_of(user, team)
    return role is not None and action in ROLE_ACTIONS[role]


def require(user: AbstractBaseUser | AnonymousUser, team: Team, action: Action) -> None:
    if not user_can(user, team, action):
        raise PermissionDenied(f"you may not {action} on team {team.slug}")


def teams_for(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Team]:
    if not user.is_authenticated or user.pk is None:  # a token principal has no memberships
        return Team.objects.none()
    if user.is_superuser:
        return Team.objects.all()
    return Team.objects.filter(memberships__user=user)
