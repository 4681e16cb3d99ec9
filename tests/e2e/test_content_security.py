"""In a real browser: untrusted Markdown loads nothing remote, and no page breaks its own CSP.

A tracker server on another loopback port stands for a remote image host: a proposal and a
source record whose Markdown embeds its pixel are opened, and the tracker must see no request
(the browser neither). Then every kind of page is opened and the console must show no
Content-Security-Policy violation and no script error, with the policy header on each.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.db import transaction
from django.urls import reverse
from playwright.sync_api import ConsoleMessage, Page, Request, expect

from memoryadmin.audit import Actor
from memoryadmin.models import Role
from reviews.models import Decision, DecisionItem, Memory, PushState, Repository
from reviews.services.repositories import repository_create, repository_sync
from sources.models import Source
from sources.services.lifecycle import source_add, source_approve
from tests.e2e.conftest import REDOC_RENDER_TIMEOUT_MS, login, shot
from tests.reviews.conftest import M, make_remote, memory_text
from tests.sources.helpers import record_text, write_source
from webhooks.models import WebhookEndpoint
from webhooks.services.endpoints import endpoint_create

pytestmark = pytest.mark.e2e


class Tracker(ThreadingHTTPServer):
    hits: list[str]


class _PixelHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        body = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
        self.send_response(200)
        self.send_header("Content-Type", "image/gif")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def tracker() -> Iterator[Tracker]:
    server = Tracker(("127.0.0.1", 0), _PixelHandler)
    server.hits = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class World:
    source: Source
    repository: Repository
    proposal: Memory
    endpoint: WebhookEndpoint
    admin: Any
    pixel: str


@pytest.fixture
def world(team, make_user, tmp_path, settings, tracker) -> World:  # type: ignore[no-untyped-def]
    """A source record and a proposal whose Markdown embeds the tracker's pixel three ways."""
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    admin = make_user("alice", team=team, role=Role.ADMIN)
    make_user("root", is_superuser=True, is_staff=True)
    actor = Actor(user=admin)
    pixel = f"http://127.0.0.1:{tracker.server_address[1]}/pixel.gif"
    body = (
        f"Intro text.\n\n![who opened this]({pixel}?who=reviewer)\n\n"
        f"![]({pixel}?who=anonymous)\n\n![ref pixel][p]\n\n[p]: {pixel}?who=reference\n"
    )
    directory = write_source(
        tmp_path / "source", {"rec": record_text("rec", title="tracked record", body=body)}
    )
    with transaction.atomic():
        source = source_add(actor=actor, team=team, location=str(directory))
    source_approve(actor=actor, source=source)  # refreshes on commit (eager)
    remote = make_remote(tmp_path / "git")
    memory_id = "20260301-tracked"
    remote.commit(
        {
            f"{M}/{memory_id}.md": memory_text(
                memory_id, title="tracked proposal", status="proposed", body=body
            )
        },
        "propose",
    )
    with transaction.atomic():
        repository = repository_create(actor=actor, team=team, name="app", remote_url=remote.url)
    repository_sync(repository_id=repository.pk)
    endpoint, _ = endpoint_create(
        actor=actor, team=team, url="https://hooks.example.org/in", events=[]
    )
    return World(
        source=source,
        repository=repository,
        proposal=Memory.objects.get(repository=repository, memory_id=memory_id),
        endpoint=endpoint,
        admin=admin,
        pixel=pixel,
    )


def _watch(page: Page, live_server) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    seen: dict[str, list[str]] = {"foreign": [], "csp": [], "errors": []}

    def request(req: Request) -> None:
        if not req.url.startswith((live_server.url, "data:", "blob:")):
            seen["foreign"].append(req.url)

    def console(message: ConsoleMessage) -> None:
        if message.location.get("url", "").endswith("/favicon.ico"):
            return  # the browser asks for one; we have none
        if message.type == "error":
            target = "csp" if "Content Security Policy" in message.text else "errors"
            seen[target].append(f"{page.url}: {message.text}")

    page.on("request", request)
    page.on("console", console)
    page.on("pageerror", lambda error: seen["errors"].append(f"{page.url}: {error}"))
    return seen


def test_it_shows_a_remote_image_in_untrusted_markdown_as_a_link_and_never_loads_it(
    page: Page, live_server, world, tracker
):  # type: ignore[no-untyped-def]
    seen = _watch(page, live_server)
    login(page, live_server, "alice", "pw-alice")
    proposal = reverse("proposal-detail", args=["alpha", world.proposal.pk])
    page.goto(proposal)
    body = page.locator(".markdown").first
    expect(body).to_contain_text("Intro text.")
    link = body.get_by_role("link", name="image: who opened this")
    expect(link).to_have_attribute("href", f"{world.pixel}?who=reviewer")
    expect(body.get_by_role("link", name=f"image: {world.pixel}?who=anonymous")).to_be_visible()
    expect(body.get_by_role("link", name="image: ref pixel")).to_be_visible()
    expect(body.locator("img")).to_have_count(0)
    shot(page, "proposal-with-image-links")

    page.goto(reverse("source-detail", args=["alpha", world.source.pk]))
    page.get_by_text("tracked record").click()  # the record's <details>
    expect(page.get_by_role("link", name="image: who opened this")).to_be_visible()
    expect(page.locator(".markdown img")).to_have_count(0)

    assert seen["foreign"] == []
    assert tracker.hits == []
    assert seen["csp"] == []


def test_it_keeps_every_page_within_its_content_security_policy(page: Page, live_server, world):  # type: ignore[no-untyped-def]
    objects = world
    seen = _watch(page, live_server)
    policies: dict[str, str | None] = {}
    page.on(
        "response",
        lambda response: (
            policies.__setitem__(response.url, response.headers.get("content-security-policy"))
            if response.request.resource_type == "document"
            else None
        ),
    )
    page.goto("/accounts/login/")
    login(page, live_server, "alice", "pw-alice")
    team_pages = [
        ("team-home", {}),
        ("source-list", {}),
        ("source-add", {}),
        ("source-detail", {"source_id": objects.source.pk}),
        ("review-queue", {}),
        ("review-history", {}),
        ("review-settings", {}),
        ("proposal-detail", {"memory_pk": objects.proposal.pk}),
        ("repository-list", {}),
        ("repository-add", {}),
        ("repository-detail", {"repository_pk": objects.repository.pk}),
        ("brain", {}),
        ("team-audit", {}),
        ("member-list", {}),
        ("token-list", {}),
        ("webhook-list", {}),
        ("webhook-detail", {"endpoint_id": objects.endpoint.pk}),
    ]
    for name, kwargs in team_pages:
        page.goto(reverse(name, kwargs={"team_slug": "alpha", **kwargs}))
        expect(page.locator("main h1")).to_be_visible()
    # The chart (drawn once something was decided) and the visually hidden table keep their
    # looks without inline styles.
    decision = Decision.objects.create(
        team=objects.repository.team,
        repository=objects.repository,
        kind="approve",
        actor_label="user:alice",
        author_name="Alice",
        author_email="alice@example.org",
        state=PushState.PUSHED,
    )
    DecisionItem.objects.create(
        decision=decision, memory_key="k", ref="DEC-0001", title="t", path="p", blob_sha="b" * 40
    )
    page.goto(reverse("team-home", args=["alpha"]))
    chart = page.locator("figure.chart svg")
    expect(chart).to_be_visible()
    hidden = page.locator("table.visually-hidden")
    assert hidden.evaluate("e => getComputedStyle(e).position") == "absolute"
    assert hidden.evaluate("e => getComputedStyle(e).clipPath") == "inset(50%)"
    shot(page, "team-home")
    # A page polled by htmx swaps without an inline style or eval.
    page.goto(reverse("proposal-detail", args=["alpha", objects.proposal.pk]))
    expect(page.locator("#proposal-decisions")).to_be_attached()  # hidden until a decision

    page.context.clear_cookies()
    login(page, live_server, "root", "pw-root")
    # The team switch (a <select> whose script is static/memoryadmin/app.js) still navigates.
    page.goto("/")
    page.get_by_label("Team").select_option(label="Alpha")
    expect(page).to_have_url(f"{live_server.url}/t/alpha/")
    for url in (
        reverse("admin:index"),
        reverse("admin:memoryadmin_auditevent_changelist"),
        reverse("admin:memoryadmin_team_changelist"),  # read-only: no actions column
        reverse("admin:sources_source_change", args=[objects.source.pk]),
        reverse("admin:auth_user_changelist"),
        reverse("admin:auth_user_change", args=[objects.admin.pk]),
    ):
        page.goto(url)
        expect(page.locator("#content")).to_be_visible()

    page.goto("/api/docs/")
    expect(page.get_by_role("heading", name="memoryadmin API", level=1)).to_be_visible(
        timeout=REDOC_RENDER_TIMEOUT_MS
    )
    page.get_by_placeholder("Search...").fill("bundle")  # Redoc's search runs in a worker
    expect(page.get_by_role("menuitem", name="Import a bundle (JSON body)").first).to_be_visible(
        timeout=REDOC_RENDER_TIMEOUT_MS
    )

    assert seen["csp"] == [], "\n".join(seen["csp"])
    assert seen["errors"] == [], "\n".join(seen["errors"])
    assert seen["foreign"] == []
    missing = [url for url, policy in policies.items() if not policy]
    assert not missing, missing
    strict = [p for url, p in policies.items() if "/api/docs/" not in url]
    assert all("'unsafe-inline'" not in policy for policy in strict)  # type: ignore[operator]
