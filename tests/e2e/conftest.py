"""Real-browser tests: Debian's Chromium driven by Playwright against pytest-django's live server.

Fixtures and helpers for writing an e2e test (sources, reviews, ... add theirs beside this file):

- ``pytestmark = pytest.mark.e2e`` at the top of each browser test module.
- ``browser`` (package scope): one headless Chromium for every test in ``tests/e2e``; Playwright
  gives it a fresh temporary user-data dir. Missing Chromium skips the tests, or fails them when
  ``MEMORYADMIN_REQUIRE_BROWSER=true`` (CI sets it).
- ``page`` (function scope): a new tab in a new browser context (no cookies shared between tests)
  whose ``base_url`` is the live server, so ``page.goto("/t/alpha/")`` works. Requesting it also
  requests ``live_server``, which makes the test's database transactional: rows created by
  fixtures (``team``, ``admin_user``, ``make_user``...) are committed and visible to the server.
  When the test fails, a ``failure`` screenshot is saved.
- ``login(page, live_server, username, password)``: logs in through the login page and waits
  until the browser has left it. The ``make_user`` fixture gives ``username`` the password
  ``"pw-" + username``.
- ``shot(page, name)``: saves ``test-artifacts/e2e/<test>/<nn>-<name>.png`` (``nn`` counts up
  within the test; the folder is emptied at the test's first shot and is git-ignored).
- ``synced_repository``: a repository "app" of ``team`` on a fresh local bare remote, synced once
  (its data dir under ``tmp_path``, local remotes allowed).
- Assert with ``playwright.sync_api.expect`` (it waits and retries); never sleep.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page
    from pytest_django.live_server_helper import LiveServer

ROOT = Path(__file__).resolve().parent.parent.parent
ARTIFACTS = ROOT / "test-artifacts" / "e2e"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# expect() retries this long; pages are server-rendered on loopback, so 10 s is generous.
EXPECT_TIMEOUT_MS = 10_000
# Redoc renders the whole API reference in the browser from a large schema: 6.5 s by hand at
# load 11 on 2 cores. Its first heading gets this long; every later step the usual budget.
REDOC_RENDER_TIMEOUT_MS = 60_000


def _chromium_path() -> str | None:
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    executable = _chromium_path()
    if executable is None:
        message = "chromium is not installed (apt-get install chromium)"
        if os.environ.get("MEMORYADMIN_REQUIRE_BROWSER", "").lower() == "true":
            pytest.fail(message + " and MEMORYADMIN_REQUIRE_BROWSER=true")
        pytest.skip(message)

    from playwright.sync_api import expect, sync_playwright

    # Playwright's sync API keeps an asyncio loop "running" in this thread, so Django would
    # refuse ORM calls from tests and fixtures; allow them only while the browser is alive.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    try:
        expect.set_options(timeout=EXPECT_TIMEOUT_MS)
        chromium = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    setattr(item, f"report_{report.when}", report)  # the page fixture reads it to shoot failures
    return report


@pytest.fixture
def page(
    browser: Browser, live_server: LiveServer, request: pytest.FixtureRequest
) -> Iterator[Page]:
    context = browser.new_context(base_url=live_server.url, accept_downloads=True)
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    tab = context.new_page()
    try:
        yield tab
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            shot(tab, "failure")
        context.close()


def login(page: Page, live_server: LiveServer, username: str, password: str) -> None:
    """Log in through the login page; returns once the browser has been sent on."""
    from playwright.sync_api import expect

    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page).not_to_have_url(re.compile(r"/accounts/login/"))


_shot_counts: dict[str, int] = {}


def _current_test() -> str:
    # PYTEST_CURRENT_TEST is "tests/e2e/test_x.py::test_name[param] (call)".
    nodeid = os.environ.get("PYTEST_CURRENT_TEST", "unknown").rsplit(" ", 1)[0]
    name = nodeid.split("::", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "unknown"


def shot(page: Page, name: str, *, full_page: bool = True) -> Path:
    """Save a screenshot (full page unless told): test-artifacts/e2e/<test>/<nn>-<name>.png."""
    test = _current_test()
    folder = ARTIFACTS / test
    if test not in _shot_counts:
        shutil.rmtree(folder, ignore_errors=True)
        _shot_counts[test] = 0
    _shot_counts[test] += 1
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{_shot_counts[test]:02d}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


@pytest.fixture
def synced_repository(page: Page, team, settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    """The team's repository "app" on a fresh bare remote, synced (requests ``page`` so the ORM
    calls run while the browser allows them and the rows are visible to the live server)."""
    from django.db import transaction

    from memoryadmin.audit import Actor
    from reviews.services.repositories import repository_create, repository_sync
    from tests.reviews.conftest import make_remote

    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    remote = make_remote(tmp_path / "git")
    with transaction.atomic():
        repository = repository_create(
            actor=Actor.system(), team=team, name="app", remote_url=remote.url
        )
    repository_sync(repository_id=repository.pk)
    repository.refresh_from_db()
    return repository
