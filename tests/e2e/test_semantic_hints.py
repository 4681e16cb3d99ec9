"""A reviewer sees, on a proposal's page in a 400px-wide browser, the active memory it may
duplicate: labelled, linked, both texts readable without sideways scrolling."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import login, shot
from tests.reviews.conftest import data_dir, remote, repository  # noqa: F401
from tests.semantic.conftest import loaded_model, semantic  # noqa: F401
from tests.semantic.test_hints import proposals  # noqa: F401

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_reviewer_sees_a_possible_duplicate_beside_the_proposal_on_a_narrow_screen(
    page: Page,
    live_server,  # type: ignore[no-untyped-def]
    team,
    reviewer_user,
    proposals,  # noqa: F811
) -> None:
    proposal = proposals["20260402-upload-timeouts"]
    original = proposals["20260401-retry-uploads"]
    page.set_viewport_size({"width": 400, "height": 900})
    page.set_default_navigation_timeout(60_000)  # the proposal page encodes its text
    login(page, live_server, reviewer_user.username, f"pw-{reviewer_user.username}")
    page.goto(f"{live_server.url}/t/{team.slug}/reviews/p/{proposal.pk}/")
    hints = page.locator("#similar")
    expect(hints.get_by_role("heading", name="Similar active memories")).to_be_visible()
    expect(hints.get_by_text("possible duplicate").first).to_be_visible()
    expect(hints.get_by_text("time out after 30 seconds").first).to_be_visible()
    expect(hints.get_by_text("time out after thirty seconds").first).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    shot(page, "proposal-hints-400px")
    hints.get_by_role("link", name=original.ref).first.click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(original.title)
