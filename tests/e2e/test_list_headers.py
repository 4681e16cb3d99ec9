"""Column headers sort a list with JavaScript off, keeping its filters; a refused batch in the
queue comes back on the page, sort and filters the reviewer was on."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Role
from reviews.models import Memory
from tests.e2e.conftest import EXPECT_TIMEOUT_MS, login, shot

pytestmark = pytest.mark.e2e

KEY, CACHE = "The deploy needs the token", "Caching the manifest failed"


@pytest.fixture
def no_script(browser: Browser, live_server) -> Page:  # type: ignore[no-untyped-def]
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    tab = context.new_page()
    yield tab
    context.close()


def _actions(page: Page) -> list[str]:
    return page.locator("main table tbody tr td:nth-child(3)").all_inner_texts()


def test_it_sorts_the_audit_log_by_clicking_its_headers_without_javascript(
    no_script: Page, live_server, team, make_user
) -> None:  # type: ignore[no-untyped-def]
    make_user("alice", team=team, role=Role.ADMIN)
    for action in ("source.add", "token.create", "repository.add", "source.approve"):
        audit_record(actor=Actor.system(), team=team, action=action, summary=action)
    page = no_script
    login(page, live_server, "alice", "pw-alice")
    page.goto(f"/t/{team.slug}/audit/?q=a")
    when = page.get_by_role("columnheader", name="When")
    expect(when).to_have_attribute("aria-sort", "descending")  # the log's own order, shown

    page.get_by_role("link", name="Action").click()
    expect(page).to_have_url(re.compile(r"[?&]q=a&sort=action$"))
    action = page.get_by_role("columnheader", name="Action")
    expect(action).to_have_attribute("aria-sort", "ascending")
    expect(action).to_contain_text("▲")
    expect(page.get_by_role("columnheader", name="When")).not_to_have_attribute(
        "aria-sort", re.compile(".*")
    )
    listed = _actions(page)
    assert listed == sorted(listed) and len(listed) >= 4
    expect(page.get_by_label("Search")).to_have_value("a")  # the filter bar kept the search
    shot(page, "audit-sorted-by-action")

    page.get_by_role("link", name="Action").click()  # the second click reverses
    expect(page).to_have_url(re.compile(r"sort=-action$"))
    expect(page.get_by_role("columnheader", name="Action")).to_have_attribute(
        "aria-sort", "descending"
    )
    assert _actions(page) == sorted(listed, reverse=True)


def test_it_rerenders_a_refused_batch_on_the_page_the_reviewer_was_on(
    page: Page, live_server, team, make_user, synced_repository
) -> None:  # type: ignore[no-untyped-def]
    repository = synced_repository
    base = Memory.objects.filter(repository=repository).first()
    Memory.objects.bulk_create(
        Memory(
            team=team,
            repository=repository,
            memory_id=f"20260301-bulk-{n}",
            ref=f"BLK-{n:04x}",
            type="attempt",
            title=f"Bulk {n:03d}",
            status="proposed",
            path=f".memoryrail/memories/20260301-bulk-{n}.md",
            blob_sha="0" * 40,
            created=base.created,
            updated=base.updated,
            added_at=base.added_at,
        )
        for n in range(60)
    )
    make_user("rita", team=team, role=Role.REVIEWER)
    login(page, live_server, "rita", "pw-rita")
    page.goto(f"/t/{team.slug}/reviews/")
    page.get_by_role("link", name="Title").click()  # by title, A to Z: the real ones last
    page.get_by_role("link", name="Next").click()
    expect(page).to_have_url(re.compile(r"sort=title&page=2$"))
    expect(page.locator("nav.pagination")).to_contain_text("Page 2 of 2")
    for title in (KEY, CACHE):
        row = page.locator("tbody tr", has=page.get_by_role("link", name=title))
        row.get_by_role("checkbox").check()
    page.get_by_label("Decision", exact=True).select_option("approve")
    page.get_by_label("Comment (required to reject)").fill("Both look right")
    page.get_by_role("button", name="Record decision").click()

    # Refused (one holds a secret): the same page 2, same sort, the selection and comment kept.
    expect(page.get_by_role("status")).to_contain_text("override")
    expect(page.locator("nav.pagination")).to_contain_text("Page 2 of 2")
    expect(page.get_by_role("columnheader", name="Title")).to_have_attribute(
        "aria-sort", "ascending"
    )
    for title in (KEY, CACHE):
        row = page.locator("tbody tr", has=page.get_by_role("link", name=title))
        expect(row.get_by_role("checkbox")).to_be_checked()
    expect(page.locator("tr.blocked")).to_contain_text(KEY)
    expect(page.get_by_label("Comment (required to reject)")).to_have_value("Both look right")
    shot(page, "refused-batch-page-2")

    # The pager and the headers lead back to the queue, not to the batch URL.
    page.get_by_role("link", name="Previous").click()
    expect(page).to_have_url(re.compile(rf"/t/{team.slug}/reviews/\?sort=title&page=1$"))
    expect(page.locator("nav.pagination")).to_contain_text("Page 1 of 2")
