"""Rows the steps share: a team, a user with memberships, the database vendor."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

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


def kept_scratch(prefix: str) -> Path:
    """A scratch folder in the run's workdir, removed with the workdir when the run ends, never
    by the step itself: thousands of files deleted just before the next timed step make that
    step pay for the delete (on this kind of disk, ext4 mounted with `discard`, creating 5k
    small files costs 0.15 s of system time at rest and 1.8-2.8 s within seconds of deleting
    5k others; the index row was timed right after its baseline deleted its clone)."""
    root = Path(os.environ["MEMORYADMIN_DATA_DIR"]).parent / "scratch"
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=root))
