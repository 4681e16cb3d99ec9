"""In a real browser: create an agent token from its preset, copy the client configuration shown
once, let the token read over REST, then find the read on the Usage page (also at 400 px)."""

from __future__ import annotations

import json
import re

import httpx2
import pytest
from playwright.sync_api import Page, expect

from bundles.models import Chunk
from formats import memoryai as protocol
from tests.e2e.conftest import login, shot

pytestmark = pytest.mark.e2e


def test_it_shows_the_agent_snippets_once_copies_them_and_counts_the_reads(
    page: Page, live_server, team, admin_user
) -> None:  # type: ignore[no-untyped-def]
    content = "Upload limits\n\nThe uploader accepts files up to 2 GB."
    Chunk.objects.create(
        team=team, content=content, content_hash=protocol.content_hash(content), memory_type="fact"
    )
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    login(page, live_server, "alice", "pw-alice")
    page.goto("/t/alpha/tokens/")
    page.get_by_role("link", name="Agent token").click()
    expect(page.get_by_label("Read agent context")).to_be_checked()
    expect(page.get_by_label("Propose memories to team repositories (agents)")).to_be_checked()
    expect(page.get_by_label("Export bundles")).not_to_be_checked()
    expect(page.get_by_label("Name")).to_have_value("agent")
    page.get_by_role("button", name="Create token").click()

    secret = page.locator("#new-token-secret").inner_text()
    assert re.fullmatch(r"ma_\S{20,}", secret)
    mcp_url = f"{live_server.url}/mcp"
    claude = page.locator("#snippet-claude")
    expect(claude).to_contain_text(f"claude mcp add --transport http memoryadmin {mcp_url}")
    expect(claude).to_contain_text(f"Authorization: Bearer {secret}")
    expect(page.locator("#snippet-codex")).to_contain_text("[mcp_servers.memoryadmin]")
    expect(page.locator("#snippet-codex")).to_contain_text(f"export MEMORYADMIN_TOKEN={secret}")
    cursor = page.locator("#snippet-cursor").inner_text()
    assert json.loads(cursor.split("\n\n", 1)[1])["mcpServers"]["memoryadmin"]["url"] == mcp_url
    vscode = json.loads(page.locator("#snippet-vscode").inner_text())
    assert vscode["servers"]["memoryadmin"] == {
        "type": "http",
        "url": mcp_url,
        "headers": {"Authorization": "Bearer ${input:memoryadmin-token}"},
    }
    shot(page, "agent-token-snippets")

    page.get_by_role("button", name="Copy the Claude Code configuration").click()
    expect(page.locator("button[data-copy=snippet-claude]")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == claude.inner_text()

    # Shown once: the page again has neither the secret nor the snippets.
    page.goto("/t/alpha/tokens/")
    expect(page.locator("#connect")).to_have_count(0)
    assert secret not in page.content()

    with httpx2.Client(headers={"Authorization": f"Bearer {secret}"}, timeout=30) as http:
        found = http.get(f"{live_server.url}/api/search/", params={"q": "uploader"}).json()
    ref = found["results"][0]["ref"]

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Usage").click()
    row = page.locator("#most-served tr", has_text=ref)
    expect(row).to_contain_text("Upload limits")
    expect(row).to_contain_text("token agent")
    expect(page.locator("#activity")).to_contain_text("token agent")
    shot(page, "usage-page")

    page.set_viewport_size({"width": 400, "height": 800})
    page.reload()
    expect(page.locator("#most-served")).to_be_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 400, f"the Usage page scrolls sideways at 400 px ({width} px wide)"
    shot(page, "usage-page-narrow")
