"""A link that escapes the repository is an error in the memory's staleness report: the memory
stays listed (real git remote, real sync), `memoryrail_check --json` reports it under `stale`,
approving such a proposal is refused (API and page) while rejecting works, and proposals'
links are staleness-checked so the queue's "stale links" filter matches."""

from __future__ import annotations

import json
import os

import pytest
from django.core.management import call_command
from django.urls import reverse

from memoryadmin.models import AuditEvent, Role
from reviews.models import Approval, Decision, Memory, PushState, ReviewSettings
from reviews.services.repositories import repository_sync
from tests.reviews.conftest import M, git, memory_text

ACTIVE = "20260401-outside-active"
PROPOSED = "20260402-outside-proposal"
SYMLINKED = "20260403-through-symlink"
GONE = "20260404-gone-link"


def _outside(memory: Memory) -> list[dict]:
    return [s for s in memory.stale if s["code"] == "link-outside-repo"]


@pytest.fixture
def escaping(repository, remote):  # type: ignore[no-untyped-def]
    """The seeded repository plus memories whose links escape it, and a proposal whose link is
    merely gone; synced."""
    path = remote.clone("elsewhere")
    files = {
        f"{M}/{ACTIVE}.md": memory_text(ACTIVE, links=["../../etc/passwd", "src/db"]),
        f"{M}/{PROPOSED}.md": memory_text(
            PROPOSED, type="constraint", status="proposed", links=["/etc/hostname"]
        ),
        f"{M}/{SYMLINKED}.md": memory_text(
            SYMLINKED, type="gotcha", status="proposed", links=["vendor/x"]
        ),
        f"{M}/{GONE}.md": memory_text(
            GONE, type="attempt", status="proposed", links=["src/removed.py"]
        ),
    }
    for name, text in files.items():
        (path / name).write_text(text, encoding="utf-8")
    os.symlink("/etc", path / "vendor")  # the link text stays inside; git keeps a symlink out
    git(path, "add", "-A")
    git(path, "commit", "--quiet", "-m", "links that escape")
    git(path, "push", "--quiet", "origin", "main")
    repo = repository_sync(repository_id=repository.pk)
    assert repo.last_sync_ok, repo.last_error
    return repo


def test_it_keeps_a_memory_with_a_link_outside_the_repo_listed_with_the_error(escaping):
    memory = Memory.objects.get(repository=escaping, memory_id=ACTIVE)
    assert memory.status == "active" and memory.is_stale
    assert _outside(memory) == [
        {
            "code": "link-outside-repo",
            "memory": ACTIVE,
            "id": ACTIVE,
            "link": "../../etc/passwd",
            "level": "error",
        }
    ]
    proposal = Memory.objects.get(repository=escaping, memory_id=PROPOSED)
    assert [s["link"] for s in _outside(proposal)] == ["/etc/hostname"]
    through = Memory.objects.get(repository=escaping, memory_id=SYMLINKED)
    assert [s["link"] for s in _outside(through)] == ["vendor/x"]
    # a listed memory with an error, not a broken file
    assert not [p for p in escaping.problems if p["code"] == "link-outside-repo"]


def test_it_reports_the_link_under_stale_in_memoryrail_check_json(escaping, capsys):
    with pytest.raises(SystemExit) as exited:
        call_command("memoryrail_check", str(escaping.working_dir), "--json")
    assert exited.value.code == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert {m["id"] for m in report["memories"]} >= {ACTIVE, PROPOSED, SYMLINKED}
    outside = {
        (s["memory"], s["link"]) for s in report["stale"] if s["code"] == "link-outside-repo"
    }
    assert outside == {
        (ACTIVE, "../../etc/passwd"),
        (PROPOSED, "/etc/hostname"),
        (SYMLINKED, "vendor/x"),
    }
    assert not [p for p in report["problems"] if p["code"] == "link-outside-repo"]


def test_it_refuses_to_approve_such_a_proposal_through_the_api(
    escaping, token_client, team, django_capture_on_commit_callbacks
):
    api = token_client(team, ["reviews:write", "reviews:read"])
    memory = Memory.objects.get(repository=escaping, memory_id=PROPOSED)
    response = api.post(f"/api/reviews/proposals/{memory.ref}/approve/", {}, format="json")
    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert error["code"] == "link-outside-repo"
    assert "/etc/hostname" in error["message"] and memory.ref in error["message"]
    response = api.post(
        "/api/reviews/batch/",
        {"action": "approve", "proposals": [memory.ref, SYMLINKED]},
        format="json",
    )
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "link-outside-repo"
    assert not Decision.objects.exists()
    assert not AuditEvent.objects.filter(action="review.approve").exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            f"/api/reviews/proposals/{memory.ref}/reject/",
            {"comment": "links outside the repository"},
            format="json",
        )
    assert response.status_code == 202, response.content
    assert Decision.objects.get().state == PushState.PUSHED
    assert not Memory.objects.filter(repository=escaping, memory_id=PROPOSED).exists()


def test_it_refuses_the_first_of_two_approvals_too(escaping, token_client, team):
    ReviewSettings.objects.create(team=team, require_two_approvals=True)
    api = token_client(team, ["reviews:write"])
    memory = Memory.objects.get(repository=escaping, memory_id=PROPOSED)  # a constraint
    response = api.post(f"/api/reviews/proposals/{memory.pk}/approve/", {}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "link-outside-repo"
    assert not Approval.objects.exists()


def test_it_refuses_to_approve_such_a_proposal_from_the_page(client, make_user, team, escaping):
    client.force_login(make_user("rita", team=team, role=Role.REVIEWER))
    memory = Memory.objects.get(repository=escaping, memory_id=SYMLINKED)
    page = client.get(reverse("proposal-detail", args=["alpha", memory.pk])).content.decode()
    assert "points outside the repository" in page and "vendor/x" in page
    response = client.post(
        reverse("proposal-approve", args=["alpha", memory.pk]), {"comment": "ok"}, follow=True
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "cannot be approved" in body and memory.ref in body
    assert not Decision.objects.exists()
    response = client.post(
        reverse("review-batch", args=["alpha"]),
        {"action": "approve", "proposals": [str(memory.pk)], "comment": ""},
        follow=True,
    )
    assert "cannot be approved" in response.content.decode()
    assert not Decision.objects.exists()


def test_it_checks_proposals_links_so_the_stale_filter_matches(
    escaping, client, make_user, team, token_client
):
    gone = Memory.objects.get(repository=escaping, memory_id=GONE)
    assert gone.status == "proposed" and gone.is_stale
    assert [(s["code"], s["link"]) for s in gone.stale] == [("stale-link", "src/removed.py")]
    client.force_login(make_user("vera", team=team, role=Role.VIEWER))
    body = client.get(reverse("review-queue", args=["alpha"]), {"flag": "stale"}).content.decode()
    assert "3 proposals waiting" in body
    assert gone.ref in body
    clean = client.get(reverse("review-queue", args=["alpha"]), {"flag": "clean"}).content.decode()
    assert gone.ref not in clean
    api = token_client(team, ["reviews:read"])
    listed = api.get("/api/reviews/proposals/", {"flag": "stale"}).json()
    assert {p["id"] for p in listed["results"]} == {GONE, PROPOSED, SYMLINKED}
