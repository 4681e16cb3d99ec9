"""Error pages as a person meets them: inside the layout, with the reason and a way back."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import login, shot

pytestmark = pytest.mark.e2e


def test_a_viewer_sent_to_an_admin_page_is_told_the_role_and_goes_back(
    page: Page, live_server, team, viewer_user
) -> None:  # type: ignore[no-untyped-def]
    login(page, live_server, "victor", "pw-victor")
    response = page.goto(f"/t/{team.slug}/members/")
    assert response is not None and response.status == 403
    expect(page.get_by_role("heading", level=1)).to_have_text("Not allowed")
    expect(page.get_by_role("alert")).to_have_text(
        f"You need the admin role on {team.name} to do this; your role is viewer."
    )
    # The layout is there: the team's navigation, without the admin-only links.
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Brain")).to_be_visible()
    expect(nav.get_by_role("link", name="Members")).to_have_count(0)
    shot(page, "403")
    page.get_by_role("link", name=f"Back to the {team.name} dashboard").click()
    expect(page).to_have_url(f"{live_server.url}/t/{team.slug}/")


def test_a_missing_page_says_so_and_links_to_the_teams(
    page: Page, live_server, team, admin_user
) -> None:  # type: ignore[no-untyped-def]
    login(page, live_server, "alice", "pw-alice")
    response = page.goto("/t/alpha/no-such-page/")
    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("Page not found")
    shot(page, "404")
    page.get_by_role("link", name="Go to your teams").click()
    expect(page).to_have_url(f"{live_server.url}/t/{team.slug}/")  # one team: straight to it


def test_a_buttons_address_opened_as_a_page_explains_and_goes_back(
    page: Page, live_server, team, admin_user
) -> None:  # type: ignore[no-untyped-def]
    login(page, live_server, "alice", "pw-alice")
    response = page.goto(f"/t/{team.slug}/reviews/batch/")  # a reload after a batch, a bookmark
    assert response is not None and response.status == 405
    expect(page.get_by_role("heading", level=1)).to_have_text("Not a page to open")
    expect(page.get_by_role("alert")).to_contain_text("takes a form sent with POST")
    width = page.evaluate("document.documentElement.scrollWidth")
    page.set_viewport_size({"width": 400, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth") <= 400, width
    # The team's navigation, as on its other pages (no view looked the team up).
    page.set_viewport_size({"width": 1200, "height": 800})
    expect(
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Reviews")
    ).to_be_visible()
    shot(page, "405")
    page.get_by_role("link", name=f"Back to the {team.name} dashboard").click()
    expect(page).to_have_url(f"{live_server.url}/t/{team.slug}/")
