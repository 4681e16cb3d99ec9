"""Team lists and invitations in a real browser: filter, page, download CSV; invite, accept
through the link signed out, remove with a confirmation."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from bundles.models import Chunk
from formats import memoryai as protocol
from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Membership, Role
from tests.e2e.conftest import login, shot

pytestmark = pytest.mark.e2e


def _rows(path) -> list[list[str]]:  # type: ignore[no-untyped-def]
    return list(csv.reader(io.StringIO(Path(path).read_text(encoding="utf-8"))))


def _fits(page: Page, selector: str) -> None:
    """Each element (the filter bar, the pager) ends inside the viewport: nothing to scroll."""
    width = page.viewport_size["width"]
    for box in page.locator(selector).all():
        right = box.evaluate("e => e.getBoundingClientRect().right")
        assert right <= width + 1, (selector, right)


def test_it_filters_pages_and_downloads_the_brain_and_the_audit_log(
    page: Page, live_server, team, admin_user
) -> None:  # type: ignore[no-untyped-def]
    contents = [f"Deploy note {i}" for i in range(60)] + ["=SUM(A1) rollback runbook"]
    Chunk.objects.bulk_create(
        Chunk(team=team, content=c, content_hash=protocol.content_hash(c), memory_type="fact")
        for c in contents
    )
    for action in ("source.add", "source.approve", "token.create"):
        audit_record(actor=Actor.system(), action=action, team=team, summary=f"did {action}")
    login(page, live_server, "alice", "pw-alice")

    page.goto("/t/alpha/brain/")
    pager = page.get_by_role("navigation", name="Pages")
    expect(pager).to_contain_text("Page 1 of 3 · 1\u201325 of 61")
    pager.get_by_role("link", name="3", exact=True).click()
    expect(pager.locator("[aria-current=page]")).to_have_text("3")
    shot(page, "brain-page-3")

    page.get_by_label("Search").fill("rollback")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"q=rollback"))
    chunks = page.locator("#chunks-h + form + table, section[aria-labelledby=chunks-h] table")
    expect(chunks.get_by_role("row")).to_have_count(2)  # the header and the one match
    expect(pager).to_have_count(1)
    expect(page.get_by_text("Page 1 of 1 · 1\u20131 of 1")).to_be_visible()
    shot(page, "brain-filtered")
    with page.expect_download() as info:
        page.get_by_role("link", name="Download CSV").click()
    download = info.value
    assert download.suggested_filename.startswith("alpha-brain-")
    rows = _rows(download.path())
    assert len(rows) == 2 and rows[1][-1] == "'=SUM(A1) rollback runbook"

    page.get_by_label("Zone", exact=True).select_option("critical")
    page.get_by_label("From").fill("2020-01-01")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("No chunk matches the filter.")).to_be_visible()

    page.goto("/t/alpha/brain/?flag=nonsense")
    expect(page.get_by_role("alert").filter(has_text="Select a valid choice")).to_be_visible()

    page.goto("/t/alpha/audit/")
    page.get_by_label("Action").fill("source.")
    page.get_by_role("button", name="Filter").click()
    table = page.locator("main table")
    expect(table.get_by_role("row")).to_have_count(3)
    with page.expect_download() as info:
        page.get_by_role("link", name="Download CSV").click()
    rows = _rows(info.value.path())
    assert sorted(r[2] for r in rows[1:]) == ["source.add", "source.approve"]
    shot(page, "audit-filtered")

    page.set_viewport_size({"width": 400, "height": 800})
    # The page-wide 400 px walk (tables scroll in their card) is the narrow-screen work's; the
    # filter bar and the pager must fit by themselves.
    for path in ("/t/alpha/brain/?page=2", "/t/alpha/audit/", "/t/alpha/members/"):
        page.goto(path)
        _fits(page, "form.list-filters")
        _fits(page, "nav.pagination")
    shot(page, "members-400px")


def test_it_invites_by_email_and_the_link_joins_the_team_once(
    page: Page, live_server, team, admin_user, browser, make_user
) -> None:  # type: ignore[no-untyped-def]
    login(page, live_server, "alice", "pw-alice")
    page.goto("/t/alpha/members/")
    page.get_by_label("E-mail").fill("nina@example.org")
    page.locator("#invite-role").select_option("reviewer")
    page.get_by_role("button", name="Invite").click()
    link_box = page.locator("#new-invite-link")
    expect(link_box).to_have_text(re.compile(r"/invite/inv_[\w-]+/$"))
    link = link_box.inner_text()
    expect(page.get_by_role("row").filter(has_text="nina@example.org")).to_contain_text("pending")
    shot(page, "invited")

    guest = browser.new_context(base_url=live_server.url)
    try:
        tab = guest.new_page()
        tab.goto(link)
        expect(tab.get_by_role("heading", level=1)).to_have_text("Join Alpha")
        expect(tab.get_by_text("nina@example.org")).to_be_visible()
        tab.get_by_label("Username").fill("nina")
        tab.get_by_label("Password", exact=True).fill("a long pass phrase 1")
        tab.get_by_label("Password again").fill("a long pass phrase 1")
        shot(tab, "accept")
        tab.get_by_role("button", name="Create my account and join").click()
        expect(tab).to_have_url(f"{live_server.url}/t/alpha/")
        expect(tab.get_by_text("Welcome to Alpha.")).to_be_visible()
        tab.goto(link)
        expect(tab.get_by_text("This invitation was already used.")).to_be_visible()
    finally:
        guest.close()
    nina = Membership.objects.get(team=team, user__username="nina")
    assert nina.role == Role.REVIEWER

    page.goto("/t/alpha/members/")
    page.get_by_role("link", name="Remove nina").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Remove nina from Alpha?")
    expect(page.get_by_text("revokes no token")).to_be_visible()
    shot(page, "remove-confirm")
    page.get_by_role("button", name="Remove nina").click()
    expect(page.get_by_text("Removed nina")).to_be_visible()
    assert not Membership.objects.filter(team=team, user__username="nina").exists()
