"""A team admin adds a local OpenMemories source, checks its preview, approves and refreshes it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Locator, Page, expect

from sources.models import RefreshRun, Source
from tests.e2e.conftest import login, shot
from tests.sources.helpers import record_text, write_source

pytestmark = pytest.mark.e2e


def section(page: Page, heading: str | re.Pattern[str]) -> Locator:
    """The page's <section> whose h2 is `heading`."""
    return page.locator("section").filter(has=page.get_by_role("heading", level=2, name=heading))


def test_it_adds_previews_approves_and_refreshes_a_local_source(
    page: Page, live_server, team, admin_user, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    root = write_source(
        tmp_path / "team-memories",
        {
            "test-command": record_text(
                "test-command", title="Run make test", body="Run `make test` first.\n"
            ),
            "tone": record_text("tone", title="Keep answers short", kind="preference"),
            "broken": record_text("broken", title="Broken on purpose", kind="rumour"),
        },
        name="Team memories",
    )

    login(page, live_server, "alice", "pw-alice")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Sources").click()
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    shot(page, "source-list")

    page.get_by_role("link", name="Add a source").click()
    page.get_by_label("Directory path or HTTPS URL").fill(str(root))
    shot(page, "add-form")
    page.get_by_role("button", name="Add and preview").click()

    # The preview: nothing is served yet, but the manifest and every record were read.
    expect(page.get_by_role("note")).to_contain_text("Preview.")
    manifest = section(page, "Manifest")
    expect(manifest).to_contain_text("“Team memories”: 3 entries, 2 valid records")
    expect(manifest).to_contain_text("1 rejected")
    active = section(page, re.compile(r"^Active records"))
    expect(active.get_by_role("row")).to_have_count(3)  # header + two records
    expect(active).to_contain_text("Run make test")
    expect(active).to_contain_text("Keep answers short")
    rejected = section(page, "Rejected").get_by_role("row").filter(has_text="broken")
    expect(rejected).to_contain_text("bad-kind")
    expect(rejected).to_contain_text("records/broken.md")
    shot(page, "preview")

    source = Source.objects.get(team=team)
    assert source.state == "pending"

    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_text(f"Approved {source.label}")).to_be_visible()
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    shot(page, "approved")

    runs_before = RefreshRun.objects.filter(source=source).count()
    page.get_by_role("button", name="Refresh now").click()
    expect(page.get_by_text("Refresh queued.")).to_be_visible()
    run = RefreshRun.objects.filter(source=source).latest("pk")
    assert RefreshRun.objects.filter(source=source).count() == runs_before + 1
    # The status box polls with htmx until the run is finished, then shows its outcome.
    status = page.locator("#run-status")
    expect(status).to_contain_text(f"Last refresh (#{run.pk}, manual)")
    expect(status.locator(".badge")).to_have_text("Succeeded")
    expect(status).not_to_have_attribute("hx-get", re.compile(".+"))
    shot(page, "refreshed")

    expect(page.locator("#health")).to_have_text("Fresh")
    active = section(page, re.compile(r"^Active records"))
    expect(active).to_contain_text("Run make test")
    expect(active).to_contain_text("Keep answers short")
    expect(section(page, "Rejected")).to_contain_text("bad-kind")
    history = section(page, "Refresh history")
    newest = history.locator("tbody tr").first  # newest first
    expect(newest.locator("td").first).to_have_text(str(run.pk))
    expect(newest).to_contain_text("2 active / 1 rejected")
    shot(page, "source-page")


def test_a_source_that_never_read_is_red_and_approving_it_warns(
    page: Page, live_server, team, admin_user, tmp_path, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.SOURCE_LOCAL_ROOTS = [str(tmp_path)]
    empty = tmp_path / "not-published-yet"
    empty.mkdir()
    login(page, live_server, "alice", "pw-alice")
    page.goto(f"/t/{team.slug}/sources/add/")

    # Plain http:// is refused at the form like ftp://, and nothing is saved.
    page.get_by_label("Directory path or HTTPS URL").fill("http://memories.example.org/")
    page.get_by_role("button", name="Add and preview").click()
    expect(page.locator("#id_location_error")).to_contain_text("Plain http:// is refused")
    assert not Source.objects.exists()

    # A folder without a manifest: the preview read fails, and there is no older copy.
    page.get_by_label("Directory path or HTTPS URL").fill(str(empty))
    page.get_by_role("button", name="Add and preview").click()
    banner = page.get_by_role("alert").filter(has_text="Failed, never read.")
    expect(banner).to_be_visible()
    expect(banner).to_have_class(re.compile(r"\bbad\b"))  # red, not the yellow of "stale"
    expect(page.locator(".badge.bad").filter(has_text="Failed, never read")).to_be_visible()
    expect(page.get_by_text("approving it serves nothing")).to_be_visible()
    # its refresh run says so too: nothing to serve, not "stale"
    expect(page.locator("#run-status .badge.bad")).to_have_text("Failed, nothing to serve yet")
    expect(page.locator("main")).not_to_contain_text("stale")
    shot(page, "source-failed-never-read")

    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_text("it has never been read successfully")).to_be_visible()
    assert Source.objects.get().health == "failed"
