"""Shared pieces of the REST API: which team a request acts on, and scope checks."""

from __future__ import annotations

from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import exceptions, permissions
from rest_framework.request import Request

from memoryadmin.api_errors import ApiError
from memoryadmin.models import ApiToken, Team
from memoryadmin.permissions import SCOPE_ACTIONS, teams_for, token_has_scope, user_can

__all__ = ["SCOPE_ACTIONS", "HasScope", "TeamFilterBackend", "request_team", "request_token"]


def request_token(request: Request) -> ApiToken | None:
    return request.auth if isinstance(request.auth, ApiToken) else None


def request_team(request: Request) -> Team:
    """The token's team; for a session user, `?team=<slug>` (or their only team)."""
    cached = getattr(request, "_memoryadmin_team", None)
    if cached is not None:
        return cached
    token = request_token(request)
    if token is not None:
        team = token.team
    else:
        slug = request.query_params.get("team") or request.headers.get("X-Team")
        teams = teams_for(request.user)
        if slug:
            team = teams.filter(slug=slug).first()
            if team is None:
                raise exceptions.NotFound("No such team, or you are not a member of it.")
        else:
            found = list(teams[:2])
            if len(found) != 1:
                raise exceptions.ValidationError(
                    {"team": "Name the team with ?team=<slug>."}, code="team-required"
                )
            team = found[0]
    request._memoryadmin_team = team  # type: ignore[attr-defined]
    return team


class HasScope(permissions.BasePermission):
    """Views declare `required_scopes = {"GET": "sources:read", "POST": ...}`."""

    message = "This token lacks the scope this endpoint needs."

    def has_permission(self, request, view) -> bool:  # type: ignore[no-untyped-def]
        if not (request.user and request.user.is_authenticated):
            return False
        if request.method not in view.allowed_methods:
            return True  # nothing to authorise: DRF answers 405 Method Not Allowed next
        scope = getattr(view, "required_scopes", {}).get(request.method)
        if scope is None:
            scope = getattr(view, "required_scopes", {}).get("*")
        if scope is None:
            return False
        token = request_token(request)
        if token is not None:
            if not token_has_scope(token, scope):
                message = f"This token lacks the '{scope}' scope."
                if scope in token.scopes:  # granted, but beyond its creator's current role
                    message = (
                        f"This token's '{scope}' scope needs a role its creator no longer has"
                        " on this team."
                    )
                raise exceptions.PermissionDenied(message, code="insufficient-scope")
            return True
        if not user_can(request.user, request_team(request), SCOPE_ACTIONS[scope]):
            raise exceptions.PermissionDenied(
                "Your role on this team does not allow this.", code="insufficient-role"
            )
        return True


class TeamFilterBackend(DjangoFilterBackend):
    """A list endpoint's FilterSet (the same class as its page's), bound to the request's team;
    a bad filter value is a 400 `invalid-filter` naming the parameters."""

    def get_filterset_kwargs(self, request, queryset, view):  # type: ignore[no-untyped-def]
        return {
            **super().get_filterset_kwargs(request, queryset, view),
            "team": request_team(request),
        }

    def filter_queryset(self, request, queryset, view):  # type: ignore[no-untyped-def]
        filterset = self.get_filterset(request, queryset, view)
        if filterset is None:
            return queryset
        if not filterset.is_valid():
            raise ApiError(
                400,
                "invalid-filter",
                "A filter or sort parameter has a value this list does not accept.",
                {name: [str(m) for m in errors] for name, errors in filterset.errors.items()},
            )
        return filterset.qs
