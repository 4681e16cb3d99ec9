from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from memoryadmin.permissions import ROLE_ACTIONS, role_of, teams_for


def team_navigation(request: HttpRequest) -> dict[str, Any]:
    team = getattr(request, "team", None)
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    role = role_of(user, team) if team is not None else None
    return {
        "current_team": team,
        "current_role": role,
        "current_actions": {str(a) for a in ROLE_ACTIONS.get(role, ())} if role else set(),
        "user_teams": teams_for(user),
    }
