"""Reviewing like on GitHub: keys, the next proposal after a decision, select-all, a failed
batch that keeps its selection and says which row blocks, the decided proposal's page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from memoryadmin.models import Role
from tests.e2e.conftest import login, shot

pytestmark = pytest.mark.e2e

SQLITE, KEY, CACHE = (
    "Use SQLite for the embedded mode",
    "The deploy needs the token",
    "Caching the manifest failed",
)


def _h1(page: Page):  # type: ignore[no-untyped-def]
    return page.get_by_role("heading", level=1)


def test_it_reviews_with_keys_lands_on_the_next_and_keeps_a_failed_batch(
    page: Page, live_server, team, make_user, synced_repository
) -> None:  # type: ignore[no-untyped-def]
    make_user("rita", team=team, role=Role.REVIEWER)
    login(page, live_server, "rita", "pw-rita")
    page.goto(f"{live_server.url}/t/{team.slug}/reviews/")

    # The queue lists its shortcuts; j moves to the first proposal, Enter opens it.
    page.get_by_text("Keyboard shortcuts").click()
    expect(page.locator("#shortcuts")).to_contain_text("next proposal")
    page.keyboard.press("j")
    expect(page.get_by_role("link", name=SQLITE)).to_be_focused()
    page.keyboard.press("Enter")
    expect(_h1(page)).to_contain_text(SQLITE)
    # A superseding proposal shows its inline diff against what it replaces.
    expect(page.locator("#inline-diff")).to_contain_text("Changes against")
    expect(page.locator("#inline-diff ins").first).to_be_visible()
    expect(page.locator("#inline-diff script")).to_have_count(0)
    shot(page, "inline-diff")

    # a approves, and the reviewer lands on the next proposal of the queue.
    page.keyboard.press("a")
    expect(_h1(page)).to_contain_text(KEY)
    expect(page.get_by_role("status")).to_contain_text("Approved")
    page.keyboard.press("j")
    expect(_h1(page)).to_contain_text(CACHE)
    page.keyboard.press("k")
    expect(_h1(page)).to_contain_text(KEY)
    # r without a comment asks for one first (and records nothing).
    page.keyboard.press("r")
    expect(page.get_by_label("Comment (required to reject)")).to_be_focused()
    expect(_h1(page)).to_contain_text(KEY)

    # Select-all, then a batch approval that one proposal (a secret) refuses.
    page.get_by_role("link", name="← Review queue").click()
    expect(page.get_by_role("heading", level=2)).to_have_text("2 proposals waiting")
    page.get_by_label("Select all proposals on this page").check()
    boxes = page.locator("input[name=proposals]")
    expect(boxes).to_have_count(2)
    for n in range(2):
        expect(boxes.nth(n)).to_be_checked()
    page.get_by_label("Decision", exact=True).select_option("approve")
    page.get_by_label("Comment (required to reject)").fill("Batch looks fine")
    page.get_by_role("button", name="Record decision").click()
    expect(page.get_by_role("status")).to_contain_text("override")
    # Nothing lost: the selection and the comment are kept, the blocking row is marked.
    for n in range(2):
        expect(boxes.nth(n)).to_be_checked()
    expect(page.get_by_label("Comment (required to reject)")).to_have_value("Batch looks fine")
    blocked = page.locator("tr.blocked")
    expect(blocked).to_have_count(1)
    expect(blocked).to_contain_text(KEY)
    expect(blocked).to_contain_text("Blocks the batch")
    shot(page, "failed-batch-kept")
    page.get_by_role("button", name=re.compile(r"^Decide the others \(1\)")).click()
    expect(_h1(page)).to_have_text("Decision history")
    expect(page.locator("#history")).to_contain_text(CACHE)

    # The last one: rejected from its page; the queue is empty after it.
    page.get_by_role("link", name="← Review queue").click()
    page.get_by_role("link", name=KEY).click()
    page.get_by_label("Comment (required to reject)").fill("Holds a token")
    page.get_by_role("button", name="Reject (deletes the file)").click()
    expect(page.get_by_role("status")).to_contain_text("last proposal")
    expect(page.get_by_role("heading", level=2)).to_have_text("0 proposals waiting")

    # The decided proposal keeps a page, reached from the history row.
    page.goto(f"{live_server.url}/t/{team.slug}/reviews/history/")
    page.locator("#history").get_by_role("link", name=re.compile(KEY)).click()
    expect(_h1(page)).to_contain_text("Rejected")
    expect(page.locator("#decision-comment")).to_have_text("Holds a token")
    expect(page.locator(".decided-item")).to_contain_text("secret masked")
    page.set_viewport_size({"width": 400, "height": 800})
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 400, width
    shot(page, "decided-proposal")
