"""The API reference page renders in a real browser from our own static files (no CDN)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, Request, expect

from tests.e2e.conftest import REDOC_RENDER_TIMEOUT_MS, shot

pytestmark = pytest.mark.e2e


def test_it_renders_the_redoc_reference_from_our_own_files(page: Page, live_server):  # type: ignore[no-untyped-def]
    foreign: list[str] = []

    def record(request: Request) -> None:
        if not request.url.startswith((live_server.url, "data:", "blob:")):
            foreign.append(request.url)

    page.on("request", record)
    page.goto("/api/docs/")
    expect(page.get_by_role("heading", name="memoryadmin API", level=1)).to_be_visible(
        timeout=REDOC_RENDER_TIMEOUT_MS
    )
    expect(page.get_by_role("heading", name="Import a bundle (JSON body)", level=2)).to_be_visible(
        timeout=REDOC_RENDER_TIMEOUT_MS
    )
    # The introduction (tokens, scopes) opens the page; the operations are grouped by area.
    expect(page.get_by_role("heading", name="Getting a token")).to_be_visible()
    expect(page.get_by_role("cell", name="team:manage", exact=True)).to_be_visible()
    menu = page.get_by_role("menu").first
    for entry in ("Getting a token", "Scopes", "Agents", "Brain & bundles", "Webhooks", "Team"):
        expect(menu.get_by_role("menuitem", name=entry, exact=True)).to_be_visible()
    # The viewport: the whole reference is one page tens of screens long, and a full-page
    # capture of it outran the 10 s budget at load 5.
    shot(page, "redoc", full_page=False)
    # Our copy of Redoc has no CDN-hosted footer logo (memoryadmin/redoc.py): nothing leaves.
    assert foreign == []
