"""An admin imports a bundle with "Propose DNA chunks for review"; the reviewer finds the chunk as
a proposal with a short title and the chunk's whole text in its body (#17 item 10)."""

from __future__ import annotations

import orjson
import pytest
from playwright.sync_api import Page, expect

from memoryadmin.models import Role
from reviews.models import Memory
from tests.bundles.helpers import chunk, make_bundle
from tests.e2e.conftest import login, shot

pytestmark = pytest.mark.e2e

LONG = (
    "Always run the database migrations in a separate deploy step before the new code starts "
    "serving traffic, never together with it. Otherwise old workers read new columns."
)


def test_an_imported_dna_chunk_is_proposed_with_its_text_as_the_body(
    page: Page, live_server, team, admin_user, make_user, synced_repository, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    bundle = tmp_path / "brain.json"
    bundle.write_bytes(orjson.dumps(make_bundle(chunks=[chunk(1, LONG, "decision")])))
    login(page, live_server, "alice", "pw-alice")
    page.goto(f"/t/{team.slug}/brain/")
    page.get_by_label("Bundle file (.json)").set_input_files(str(bundle))
    page.get_by_label("Propose DNA chunks for review in").select_option(label="app")
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("status")).to_contain_text("1 chunk inserted")
    expect(page.get_by_role("status")).to_contain_text("1 DNA chunk proposed for review")

    memory = Memory.objects.get(
        repository=synced_repository, status="proposed", title__startswith="Always run"
    )
    assert len(memory.title) <= 80 and LONG.startswith(memory.title.removesuffix("…"))
    make_user("rita", team=team, role=Role.REVIEWER)
    page.context.clear_cookies()
    login(page, live_server, "rita", "pw-rita")
    page.goto(f"/t/{team.slug}/reviews/")
    page.get_by_role("link", name=memory.title).click()
    heading = page.get_by_role("heading", level=1)
    expect(heading).to_contain_text("Always run the database migrations in a separate deploy")
    expect(heading).not_to_contain_text("Otherwise old workers")  # a short title, not the text
    body = (
        page.locator("section")
        .filter(has=page.get_by_role("heading", level=2, name="Body"))
        .locator(".markdown")
    )
    expect(body).to_contain_text("Otherwise old workers read new columns.")
    expect(body).to_contain_text("never together with it.")
    shot(page, "imported-proposal")
