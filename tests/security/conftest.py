"""World fixtures for the security tests: team alpha (the victim) and beta (the other team)."""

from __future__ import annotations

import pytest

from memoryadmin.models import Role
from tests.reviews.test_http_remote import http_remote  # noqa: F401
from tests.security.world import TeamObjects, build_team
from tests.sources.conftest import https_server, test_ca  # noqa: F401
from tests.webhooks.conftest import receiver  # noqa: F401


@pytest.fixture
def world(db, team, other_team, make_user, tmp_path, settings):  # type: ignore[no-untyped-def]
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    users = {
        "viewer": make_user("victor", team=team, role=Role.VIEWER),
        "reviewer": make_user("rita", team=team, role=Role.REVIEWER),
        "admin": make_user("alice", team=team, role=Role.ADMIN),
        "other_admin": make_user("otto", team=other_team, role=Role.ADMIN),
        "superuser": make_user("root", is_superuser=True, is_staff=True),
    }
    alpha = build_team(team, users["admin"], tmp_path, label="alpha")
    beta = build_team(other_team, users["other_admin"], tmp_path, label="beta")
    return {"users": users, "alpha": alpha, "beta": beta}


__all__ = ["TeamObjects"]
