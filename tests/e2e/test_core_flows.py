"""Core flows in a real browser: log in, manage API tokens, read and export the audit log."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from memoryadmin.models import ApiToken
from tests.e2e.conftest import login, shot

pytestmark = pytest.mark.e2e


def test_it_creates_shows_once_and_revokes_a_token_then_audits_it(
    page: Page, live_server, team, admin_user, django_user_model
) -> None:  # type: ignore[no-untyped-def]
    django_user_model.objects.create_superuser("root", "root@example.org", "pw-root")

    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    shot(page, "login-page")

    login(page, live_server, "alice", "pw-alice")
    # One team: the home page sends the admin straight to its dashboard.
    expect(page).to_have_url(f"{live_server.url}/t/alpha/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Alpha")
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Dashboard")).to_have_attribute("aria-current", "page")
    shot(page, "dashboard")

    nav.get_by_role("link", name="Tokens").click()
    expect(page.get_by_role("heading", name="API tokens")).to_be_visible()
    expect(page.get_by_text("No tokens yet.")).to_be_visible()
    shot(page, "tokens-empty")

    page.get_by_label("Name").fill("e2e-exporter")
    page.get_by_label("Export bundles").check()
    page.get_by_label("Read agent context").check()
    page.get_by_role("button", name="Create token").click()
    secret_box = page.locator("#new-token-secret")
    expect(secret_box).to_be_visible()
    expect(secret_box).to_have_text(re.compile(r"^ma_\S{20,}$"))
    secret = secret_box.inner_text()
    row = page.get_by_role("row").filter(has_text="e2e-exporter")
    expect(row).to_contain_text("bundles:export, context:read")
    expect(row.locator(".badge")).to_have_text("active")
    shot(page, "token-created")

    # Loading the page again (a GET: the secret came in the POST's answer) must not show it.
    page.goto("/t/alpha/tokens/")
    expect(page.locator("#new-token-secret")).to_have_count(0)
    expect(row.locator(".badge")).to_have_text("active")
    assert secret not in page.content()
    token = ApiToken.objects.get(team=team, name="e2e-exporter")
    assert secret.startswith(f"ma_{token.prefix}")
    shot(page, "secret-gone")

    page.get_by_role("link", name="Revoke e2e-exporter…").click()
    # A confirmation step says what revoking does before anything changes.
    expect(page.locator("#revoke-effect")).to_contain_text("401 token-revoked")
    shot(page, "token-revoke-confirm")
    page.get_by_role("button", name="Revoke “e2e-exporter” now").click()
    expect(page.get_by_role("status")).to_contain_text("revoked")
    expect(row.locator(".badge")).to_have_text("revoked")
    expect(page.get_by_role("link", name="Revoke e2e-exporter…")).to_have_count(0)
    shot(page, "token-revoked")

    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    login(page, live_server, "root", "pw-root")
    page.goto("/admin/memoryadmin/auditevent/")
    results = page.locator("#result_list")
    expect(results).to_contain_text("token.create")
    expect(results).to_contain_text("token.revoke")
    expect(results).to_contain_text("alice")
    shot(page, "admin-audit-log")

    page.locator("#changelist-filter").get_by_role("link", name="token.revoke").click()
    expect(page).to_have_url(re.compile(r"[?&]action=token.revoke"))
    expect(results.locator("tbody tr")).to_have_count(1)
    expect(results).to_contain_text("token.revoke")
    expect(results).not_to_contain_text("token.create")
    shot(page, "admin-audit-log-filtered")

    export = page.get_by_role("link", name="Export CSV (as filtered)")
    expect(export).to_have_attribute("href", re.compile(r"export\.csv\?action=token.revoke"))
    with page.expect_download() as download_info:
        export.click()
    download = download_info.value
    assert download.suggested_filename == "audit-events.csv"
    csv_text = download.path().read_text(encoding="utf-8")
    lines = csv_text.strip().splitlines()
    assert lines[0].startswith("time,team,actor,action,")
    assert len(lines) == 2, csv_text
    assert ",alpha,user:alice,token.revoke," in lines[1]
    assert "token.create" not in csv_text
    assert secret not in csv_text


def test_it_hides_tokens_from_a_viewer_and_forbids_the_page(
    page: Page, live_server, team, viewer_user
) -> None:  # type: ignore[no-untyped-def]
    login(page, live_server, "victor", "pw-victor")
    expect(page).to_have_url(f"{live_server.url}/t/alpha/")
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Dashboard")).to_be_visible()
    expect(nav.get_by_role("link", name="Tokens")).to_have_count(0)
    expect(nav.get_by_role("link", name="Audit")).to_have_count(0)
    shot(page, "viewer-dashboard")

    response = page.goto("/t/alpha/tokens/")
    assert response is not None
    assert response.status == 403
    shot(page, "viewer-tokens-forbidden")
