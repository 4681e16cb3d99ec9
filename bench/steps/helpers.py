"""Rows the steps share: a team, a user with memberships, the database vendor."""

from __future__ import annotations

# -- helpers --------------------------------------------------------------------------------


def _team(slug: str):  # type: ignore[no-untyped-def]
    from memoryadmin.models import Team

    team, _ = Team.objects.get_or_create(slug=slug, defaults={"name": slug})
    return team


def _vendor() -> str:
    from django.db import connection

    return connection.vendor


def _user(username: str, teams: list[str], role: str = "admin"):  # type: ignore[no-untyped-def]
    from django.contrib.auth import get_user_model

    from memoryadmin.models import Membership

    user, _ = get_user_model().objects.get_or_create(username=username)
    for slug in teams:
        Membership.objects.update_or_create(user=user, team=_team(slug), defaults={"role": role})
    return user
