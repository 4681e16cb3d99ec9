"""The one place that answers "may this user do X on this team"."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet

from memoryadmin.models import ApiToken, Membership, Role, Scope, Team, TokenKind

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    from memoryadmin.audit import Actor


class Action(StrEnum):
    VIEW = "view"  # read the team's sources, reviews, brain, audit
    REVIEW = "review"  # approve or reject proposals
    MANAGE = "manage"  # add/approve sources, repositories, tokens, imports


ROLE_ACTIONS: dict[str, frozenset[Action]] = {
    Role.VIEWER: frozenset({Action.VIEW}),
    Role.REVIEWER: frozenset({Action.VIEW, Action.REVIEW}),
    Role.ADMIN: frozenset({Action.VIEW, Action.REVIEW, Action.MANAGE}),
}


# What each token scope needs: of a signed-in user calling the API with a session, and of the
# creator of a personal token, on the token's team, at the time of each request.
SCOPE_ACTIONS: dict[str, Action] = {
    Scope.BUNDLES_EXPORT: Action.VIEW,
    Scope.BUNDLES_IMPORT: Action.MANAGE,
    Scope.CONTEXT_READ: Action.VIEW,
    Scope.SOURCES_READ: Action.VIEW,
    Scope.SOURCES_MANAGE: Action.MANAGE,
    Scope.REVIEWS_READ: Action.VIEW,
    Scope.REVIEWS_WRITE: Action.REVIEW,
    Scope.REVIEWS_PROPOSE: Action.VIEW,  # a proposal waits for review (bundles.agents.proposals)
    Scope.TEAM_MANAGE: Action.MANAGE,
}


def token_owner_problem(token: ApiToken) -> str | None:
    """Why a personal token can not act any more (its person left or was disabled), or None."""
    if token.kind == TokenKind.TEAM:
        return None
    creator = token.created_by
    if creator is None or not creator.is_active:
        return "The person who created this token can no longer sign in."
    if role_of(creator, token.team) is None:
        return "The person who created this token is no longer a member of its team."
    return None


def token_has_scope(token: ApiToken, scope: str) -> bool:
    """Granted and, for a personal token, still allowed by its creator's current role."""
    return scope in token_scopes(token)


def token_scopes(token: ApiToken) -> frozenset[str]:
    """The scopes a token may use now: a team token its scopes; a personal token those its
    creator's current role on the team allows (none once the creator has left)."""
    cached = token.__dict__.get("_effective_scopes")
    if cached is not None:
        return cached
    granted = frozenset(token.scopes)
    if token.kind == TokenKind.TEAM:
        effective = granted
    elif token_owner_problem(token) is not None:
        effective = frozenset()
    else:
        role = role_of(token.created_by, token.team)
        allowed = ROLE_ACTIONS[role] if role is not None else frozenset()
        effective = frozenset(s for s in granted if SCOPE_ACTIONS.get(s) in allowed)
    token.__dict__["_effective_scopes"] = effective
    return effective


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


# What a refusal says, per scope, to a token and to a user (shown in the API's 403).
_REFUSALS: dict[str, tuple[str, str]] = {
    Scope.REVIEWS_WRITE: (
        "this token may not decide proposals of this team",
        "your role on this team does not allow reviewing",
    ),
}


def actor_require(actor: Actor, team: Team, scope: str | Action) -> None:
    """May the actor of a service call do what `scope` allows on `team`? Raise PermissionDenied.

    The rule `HasScope` applies to requests, for every caller of a service: a token needs the
    scope on its own team (a personal token also its creator's current role, `token_scopes`), a
    user the role the scope maps to (`SCOPE_ACTIONS`), and the system acts on every team. An
    `Action` no scope grants (review routing and settings: `MANAGE`) is for signed-in people.
    """
    if isinstance(scope, Action):
        if actor.user is None or not user_can(actor.user, team, scope):
            raise PermissionDenied(f"only team members allowed to {scope} may do this")
        return
    token_refusal, user_refusal = _REFUSALS.get(
        scope,
        (f"this token lacks the '{scope}' scope on this team", "your role does not allow this"),
    )
    if actor.token is not None:
        if actor.token.team_id != team.pk or not token_has_scope(actor.token, scope):
            raise PermissionDenied(token_refusal)
    elif actor.user is not None and not user_can(actor.user, team, SCOPE_ACTIONS[scope]):
        raise PermissionDenied(user_refusal)
