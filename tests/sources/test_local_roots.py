"""Local sources live under the folders an operator allows, and one team's folder is its own.

Before, any absolute path was accepted: team A's admin could register team B's folder (or
/etc) and read it through A's context API, and the error texts told which paths existed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from memoryadmin.audit import Actor
from memoryadmin.models import Role
from sources import demo, fetchers
from sources.models import Health, RunStatus, Source
from sources.services.lifecycle import (
    LOCAL_NEEDS_SUPERUSER,
    LOCAL_SHARED,
    source_add,
    source_approve,
)
from sources.services.refresh import source_refresh
from tests.conftest import ROOT
from tests.sources.helpers import record_text, write_source


@pytest.fixture
def roots(settings, tmp_path) -> Path:  # type: ignore[no-untyped-def]
    """One allowed root, tmp/allowed; tmp/outside is a real source folder outside it."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    settings.SOURCE_LOCAL_ROOTS = [str(allowed)]
    settings.SOURCE_LOCAL_SHARED = False
    write_source(tmp_path / "outside", {"secret": record_text("secret", title="OUTSIDE")})
    return allowed


def _post_add(client, team, location: str):  # type: ignore[no-untyped-def]
    return client.post(
        reverse("source-add", args=[team.slug]),
        {"location": location, "credential_kind": "none", "refresh_minutes": 60},
    )


def _errors(response) -> list[str]:  # type: ignore[no-untyped-def]
    return response.context["form"].errors.get("location", [])


def _source(team, folder: Path, record_id: str) -> Source:  # type: ignore[no-untyped-def]
    write_source(folder, {record_id: record_text(record_id, title=f"{record_id} title")})
    source = source_add(actor=Actor.system(), team=team, location=str(folder))
    source_approve(actor=Actor.system(), source=source)
    source_refresh(source_id=source.pk)
    source.refresh_from_db()
    return source


def test_it_refuses_every_path_outside_the_roots_with_one_text_that_tells_nothing(
    client, admin_user, team, roots, tmp_path
):
    (roots / "escape").symlink_to(tmp_path / "outside")
    client.force_login(admin_user)
    outside = [
        str(tmp_path / "outside"),  # exists, a valid source
        str(tmp_path / "outside" / "records" / "secret.md"),  # an existing file
        str(tmp_path / "no-such-folder"),  # does not exist
        "/etc",
        f"{roots}/../outside",  # climbs out
        str(roots / "escape"),  # a symlink inside the root pointing out
        str(tmp_path / "allowed-sibling"),  # shares the root's name as a prefix only
    ]
    for location in outside:
        response = _post_add(client, team, location)
        assert response.status_code == 200, location
        assert _errors(response) == [fetchers.OUTSIDE_ROOTS], location  # the same for each
        page = response.content.decode().lower()
        assert "exist" not in page and "not a directory" not in page, location
    assert not Source.objects.exists()


def test_it_accepts_a_folder_inside_a_root_and_stores_it_resolved(
    client, admin_user, team, roots, django_capture_on_commit_callbacks
):
    write_source(roots / "team-a" / "real", {"a": record_text("a")})
    (roots / "team-a" / "link").symlink_to(roots / "team-a" / "real")
    client.force_login(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = _post_add(client, team, str(roots / "team-a" / "link"))
    assert response.status_code == 302
    source = Source.objects.get(team=team)
    assert source.identity == os.path.realpath(roots / "team-a" / "real")
    assert source.current_snapshot is not None and source.current_snapshot.record_count == 1


def test_it_refuses_another_teams_folder_and_folders_inside_or_around_it(
    client, make_user, team, other_team, roots, settings
):
    theirs = _source(other_team, roots / "beta" / "src", "beta-private")
    assert theirs.health == Health.FRESH
    (roots / "beta" / "src" / "sub").mkdir()
    admin = make_user("mallory", team=team, role=Role.ADMIN)
    client.force_login(admin)
    for location in (roots / "beta" / "src", roots / "beta" / "src" / "sub", roots / "beta"):
        response = _post_add(client, team, str(location))
        assert _errors(response) == [LOCAL_SHARED], location
    assert not Source.objects.filter(team=team).exists()

    settings.SOURCE_LOCAL_SHARED = True  # an operator may allow it
    assert _post_add(client, team, str(roots / "beta" / "src")).status_code == 302


def test_it_lets_only_a_superuser_add_a_local_folder_when_no_roots_are_set(
    client, admin_user, make_user, team, settings, tmp_path
):
    settings.SOURCE_LOCAL_ROOTS = []
    folder = write_source(tmp_path / "src", {"a": record_text("a")})
    client.force_login(admin_user)
    response = _post_add(client, team, str(folder))
    assert _errors(response) == [LOCAL_NEEDS_SUPERUSER]
    assert "local directories need a superuser" in response.content.decode()
    with pytest.raises(ValidationError):  # the service refuses it too, whoever calls it
        source_add(actor=Actor(user=admin_user), team=team, location=str(folder))
    assert not Source.objects.exists()

    operator = make_user("root", is_superuser=True, is_staff=True)
    client.force_login(operator)
    assert _post_add(client, team, str(folder)).status_code == 302
    assert Source.objects.get(team=team).identity == os.path.realpath(folder)


def test_it_reads_no_folder_a_team_admin_added_once_no_roots_are_set(
    team, admin_user, roots, settings
):
    """Upgrading with no roots configured: a folder a team admin registered before is not read."""
    write_source(roots / "old", {"a": record_text("a")})
    source = Source.objects.create(
        team=team, kind="local", identity=str(roots / "old"), added_by=admin_user
    )
    settings.SOURCE_LOCAL_ROOTS = []
    run = source_refresh(source_id=source.pk)
    assert run.status == RunStatus.FAILED and run.error_code == "local-not-allowed"
    assert Source.objects.get(pk=source.pk).current_snapshot is None


def test_it_stops_reading_a_folder_that_a_symlink_later_points_outside_the_roots(
    team, roots, tmp_path, token_client
):
    source = _source(team, roots / "alpha", "a")
    # The folder is replaced by a symlink to a folder outside the roots.
    (roots / "alpha").rename(tmp_path / "moved")
    (roots / "alpha").symlink_to(tmp_path / "outside")
    run = source_refresh(source_id=source.pk)
    source.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error_code == "outside-roots"
    assert run.error == fetchers.OUTSIDE_ROOTS
    assert source.health == Health.STALE
    records = token_client(team, ["context:read"]).get("/api/context/").json()["records"]
    assert [(r["id"], r["stale"]) for r in records] == [("a", True)]  # never "secret"


def test_it_stops_reading_a_folder_that_a_symlink_later_points_at_another_teams_folder(
    team, other_team, roots, token_client
):
    _source(other_team, roots / "beta", "beta-private")
    ours = _source(team, roots / "alpha", "a")
    (roots / "alpha" / "records" / "a.md").unlink()
    (roots / "alpha" / "memories.json").unlink()
    (roots / "alpha" / "records").rmdir()
    (roots / "alpha").rmdir()
    (roots / "alpha").symlink_to(roots / "beta")
    run = source_refresh(source_id=ours.pk)
    assert run.status == RunStatus.FAILED and run.error_code == "folder-shared"
    records = token_client(team, ["context:read"]).get("/api/context/").json()["records"]
    assert [r["id"] for r in records] == ["a"]


def test_it_seeds_the_demo_under_its_allowed_folder_and_says_so_when_it_is_not(
    team, admin_user, settings, tmp_path
):
    settings.DATA_DIR = tmp_path
    settings.SOURCE_LOCAL_ROOTS = [str(tmp_path / "demo" / "openmemories")]
    assert "succeeded" in demo.seed(team=team, user=admin_user)
    Source.objects.all().delete()
    settings.SOURCE_LOCAL_ROOTS = [str(tmp_path / "elsewhere")]
    message = demo.seed(team=team, user=admin_user)
    assert "not added" in message and fetchers.OUTSIDE_ROOTS in message


def test_it_allows_the_demo_folder_by_default_under_debug_only(tmp_path):
    """`make run` sets MEMORYADMIN_DEBUG=true: its demo folder must be an allowed root."""
    code = "from django.conf import settings; print(repr(settings.SOURCE_LOCAL_ROOTS))"
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("MEMORYADMIN_") and key != "DJANGO_SETTINGS_MODULE"
    }
    env |= {"MEMORYADMIN_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "memoryadmin.settings"}
    prelude = "import django; django.setup(); "

    def roots(debug: str) -> list[str]:
        out = subprocess.run(
            [sys.executable, "-c", prelude + code],
            env={**env, "MEMORYADMIN_DEBUG": debug, "MEMORYADMIN_SECRET_KEY": "k" * 50},
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return eval(out.stdout)  # noqa: S307 - our own repr of a list of strings

    assert str(tmp_path / "demo" / "openmemories") in roots("true")
    assert roots("false") == []
