"""Every team page at 400 px: nothing wider than the viewport; the header folds into a menu.

The pages are listed from the URLconf (every route under `/t/<team_slug>/`), so a page added
later is checked too: its URL parameters must be in `ids` below (the test says which is missing).
A route that only takes POST (405 to a GET) or answers a download is skipped. The team is seeded
through the real services (tests/security/world.py) and then given the long names real teams
have: a long team name, an unbroken repository name, a long token name and webhook URL.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from django.db import transaction
from django.urls import get_resolver
from playwright.sync_api import Browser, Page, expect

from memoryadmin.audit import Actor
from memoryadmin.models import ApiToken, Role, Team
from memoryadmin.services import membership_set
from reviews.models import Repository
from tests.e2e.conftest import EXPECT_TIMEOUT_MS, login, shot
from tests.security.test_input_characters import CONVERTER, _routes
from tests.security.world import build_team
from webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.e2e

WIDTH = 400
# What a Python value looks like when a template prints it instead of words.
# (a timedelta prints as "0:15:00": one digit before the first colon; times print as 04:15:00)
PYTHON_REPR = re.compile(r"\{'|\['|<QuerySet|datetime\.|timedelta\(|(?<![\d:])\d:\d\d:\d\d\b")
LONG_TEAM = "Platform Reliability Engineering, Europe, Middle East and Africa (on call rota)"
LONG_REPO = "platform-infrastructure-shared-agent-memories-production-eu-west-1-mirror"
LONG_TOKEN = "nightly-export-for-the-customer-support-knowledge-base-synchronisation-job"
LONG_HOOK = "https://hooks.example.org/services/T0123456789ABCDEF/B0123456789ABCDEF/" + "x" * 48


@pytest.fixture
def seeded(transactional_db, team, make_user, tmp_path, settings):  # type: ignore[no-untyped-def]
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    admin = make_user("alexandra.konstantinopoulou", team=team, role=Role.ADMIN)
    # One transaction, as under the `db` fixture: the world's tasks queued on commit (eager
    # here) must not run between its steps (it arranges a push the remote refuses).
    with transaction.atomic():
        objects = build_team(team, admin, tmp_path, label="alpha")
    Team.objects.filter(pk=team.pk).update(name=LONG_TEAM)
    Repository.objects.filter(pk=objects.repository.pk).update(name=LONG_REPO)
    ApiToken.objects.filter(pk=objects.token.pk).update(name=LONG_TOKEN)
    WebhookEndpoint.objects.filter(pk=objects.endpoint.pk).update(url=LONG_HOOK)
    return objects


def team_routes() -> list[tuple[str, str]]:
    return sorted(
        (route, name or route)
        for route, name in _routes(get_resolver().url_patterns)
        if route.startswith("t/<slug:team_slug>/")
    )


def _fill(route: str, ids: dict[str, object]) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group("name")
        assert name in ids, f"add a value for URL parameter {name!r} to the narrow-screen test"
        return quote(str(ids[name]))

    return "/" + CONVERTER.sub(one, route)


@pytest.fixture
def narrow(browser: Browser, live_server) -> Page:  # type: ignore[no-untyped-def]
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": WIDTH, "height": 800}
    )
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    tab = context.new_page()
    yield tab
    context.close()


def _sign_in(page: Page) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("alexandra.konstantinopoulou")
    page.get_by_label("Password").fill("pw-alexandra.konstantinopoulou")
    page.get_by_role("button", name="Log in").click()
    expect(page).not_to_have_url(re.compile(r"/accounts/login/"))


def _overflow(page: Page) -> dict:
    return page.evaluate(
        """() => {
          const doc = document.documentElement;
          const wide = [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > doc.clientWidth + 1
                         && !e.closest('section, pre, .menu-panel'))
            .slice(0, 5).map(e => e.tagName + '.' + e.className);
          return {scroll: doc.scrollWidth, client: doc.clientWidth, wide};
        }"""
    )


def test_no_team_page_is_wider_than_a_400px_screen(narrow: Page, seeded) -> None:
    _sign_in(narrow)
    ids = seeded.ids()
    checked, skipped = [], []
    for route, name in team_routes():
        url = _fill(route, ids)
        # Asked first through the browser's own session: a download or a POST-only route is
        # not a page to measure.
        probe = narrow.request.get(url, max_redirects=0)
        content_type = probe.headers.get("content-type", "")
        if probe.status in (302, 405) or not content_type.startswith("text/html"):
            skipped.append(name)
            continue
        assert probe.status < 500, f"{name} {url}: {probe.status}"
        narrow.goto(url)
        text = narrow.evaluate("document.body.textContent")  # folded <details> included
        assert not PYTHON_REPR.search(text), f"{name} shows {PYTHON_REPR.search(text)[0]!r}"
        measured = _overflow(narrow)
        assert measured["scroll"] <= WIDTH, f"{name} ({url}) is {measured} wide"
        checked.append(name)
        shot(narrow, name)
    # The pages a person opens are all among those checked.
    for must in (
        "team-home",
        "source-list",
        "source-detail",
        "review-queue",
        "proposal-detail",
        "repository-detail",
        "brain",
        "brain-job",
        "token-list",
        "member-list",
        "team-audit",
        "webhook-list",
        "webhook-detail",
    ):
        assert must in checked, (must, skipped)


def test_the_header_folds_into_a_menu_that_opens_without_javascript(
    browser: Browser, live_server, seeded
) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(
        base_url=live_server.url,
        viewport={"width": WIDTH, "height": 800},
        java_script_enabled=False,
    )
    page = context.new_page()
    try:
        _sign_in(page)
        page.goto(f"/t/{seeded.team.slug}/")
        nav = page.get_by_role("navigation", name="Main")
        expect(nav).to_be_hidden()  # folded
        page.locator("label.menu-button").click()  # the checkbox's label: no script involved
        expect(nav.get_by_role("link", name="Sources")).to_be_visible()
        assert _overflow(page)["scroll"] <= WIDTH
        shot(page, "menu-open")
        nav.get_by_role("link", name="Brain").click()
        expect(page).to_have_url(re.compile(r"/brain/$"))
    finally:
        context.close()


def test_the_team_switch_works_without_javascript(
    browser: Browser, live_server, team, other_team, make_user
) -> None:  # type: ignore[no-untyped-def]
    make_user("sam", team=team, role=Role.VIEWER)
    from django.contrib.auth import get_user_model

    membership_set(
        actor=Actor.system(),
        team=other_team,
        user=get_user_model().objects.get(username="sam"),
        role=Role.VIEWER,
    )
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill("sam")
        page.get_by_label("Password").fill("pw-sam")
        page.get_by_role("button", name="Log in").click()
        page.goto(f"/t/{team.slug}/")
        page.get_by_role("combobox", name="Team").select_option(label=other_team.name)
        page.get_by_role("button", name="Go").click()
        expect(page).to_have_url(f"{live_server.url}/t/{other_team.slug}/")
        expect(page.get_by_role("heading", level=1)).to_have_text(other_team.name)
    finally:
        context.close()


def test_with_javascript_choosing_a_team_goes_there_at_once(
    page: Page, live_server, team, other_team, make_user
) -> None:  # type: ignore[no-untyped-def]
    from django.contrib.auth import get_user_model

    make_user("sam", team=team, role=Role.VIEWER)
    membership_set(
        actor=Actor.system(),
        team=other_team,
        user=get_user_model().objects.get(username="sam"),
        role=Role.VIEWER,
    )

    login(page, live_server, "sam", "pw-sam")
    page.goto(f"/t/{team.slug}/")
    expect(page.get_by_role("button", name="Go")).to_be_hidden()
    page.get_by_role("combobox", name="Team").select_option(label=other_team.name)
    expect(page).to_have_url(f"{live_server.url}/t/{other_team.slug}/")
