"""Two reviewers decide MemoryRail proposals in the browser; the commits land on the real remote."""

from __future__ import annotations

import re

import pytest
from django.db import transaction
from playwright.sync_api import Locator, Page, expect

from memoryadmin.audit import Actor
from memoryadmin.models import Role
from reviews.services.repositories import repository_create, repository_sync
from tests.e2e.conftest import login, shot
from tests.reviews.conftest import M, make_remote

pytestmark = pytest.mark.e2e


def section(page: Page, heading: str | re.Pattern[str]) -> Locator:
    return page.locator("section").filter(has=page.get_by_role("heading", level=2, name=heading))


def decision_row(page: Page, title: str) -> Locator:
    return page.locator("#history tbody tr").filter(has_text=title)


def decide(page: Page, live_server, username: str, title: str) -> None:  # type: ignore[no-untyped-def]
    page.context.clear_cookies()
    login(page, live_server, username, f"pw-{username}")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Reviews").click()
    expect(page.get_by_role("heading", level=1, name="Review queue")).to_be_visible()
    page.get_by_role("link", name=title).click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(title)


def test_it_approves_a_superseding_proposal_and_rejects_another_then_pushes_both(
    page: Page, live_server, team, make_user, settings, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    remote = make_remote(tmp_path / "git")
    with transaction.atomic():
        repository = repository_create(
            actor=Actor.system(), team=team, name="app", remote_url=remote.url
        )
    repository_sync(repository_id=repository.pk)
    make_user("rita", team=team, role=Role.REVIEWER)
    make_user("rob", team=team, role=Role.REVIEWER)

    decide(page, live_server, "rita", "Use SQLite for the embedded mode")
    # The decision it replaces is shown beside the proposal.
    old = section(page, re.compile(r"^Replaces .* Use PostgreSQL$"))
    new = section(page, "Proposal")
    expect(page.locator(".side-by-side")).to_be_visible()
    expect(old).to_contain_text("active")
    expect(old).to_contain_text("Why it matters.")
    expect(new).to_contain_text("Small installs need no server.")
    expect(new.locator("script")).to_have_count(0)
    shot(page, "superseding-proposal")

    page.get_by_label("Comment (required to reject)").fill("Right for small installs.")
    page.get_by_role("button", name="Approve").click()
    # The answer is the next proposal of the queue; the history polls while a push is pending.
    expect(page.get_by_role("status")).to_contain_text("Approved")
    expect(page.get_by_role("heading", level=1)).to_contain_text("The deploy needs the token")
    page.goto(f"{live_server.url}/t/{team.slug}/reviews/history/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Decision history")
    row = decision_row(page, "Use SQLite for the embedded mode")
    expect(row).to_contain_text("user:rita")
    expect(row).to_contain_text("approve in app")
    expect(row.locator(".badge")).to_have_text("pushed")
    shot(page, "approved-and-pushed")

    page.get_by_role("link", name="← Review queue").click()
    expect(page.get_by_role("heading", level=2)).to_have_text("2 proposals waiting")
    shot(page, "queue-after-approval")

    decide(page, live_server, "rob", "Caching the manifest failed")
    page.get_by_label("Comment (required to reject)").fill("An attempt, not a lasting memory.")
    page.get_by_role("button", name="Reject (deletes the file)").click()
    # The last of the queue: the reviewer lands on the one before it.
    expect(page.get_by_role("heading", level=1)).to_contain_text("The deploy needs the token")
    page.goto(f"{live_server.url}/t/{team.slug}/reviews/history/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Decision history")
    row = decision_row(page, "Caching the manifest failed")
    expect(row).to_contain_text("user:rob")
    expect(row).to_contain_text("An attempt, not a lasting memory.")
    expect(row.locator(".badge")).to_have_text("pushed")
    shot(page, "rejected-and-pushed")

    # The bare remote has both commits, authored by the reviewers.
    log = remote.log("%an|%ae|%s")
    assert log[0].startswith("Rob|rob@example.org|"), log
    assert log[1].startswith("Rita|rita@example.org|"), log
    assert "status: active" in remote.show(f"{M}/20260201-use-sqlite.md").replace('"', "")
    assert "superseded" in remote.show(f"{M}/20260101-use-postgres.md")
    assert not remote.exists(f"{M}/20260203-cache-attempt.md")
