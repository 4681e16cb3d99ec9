"""A team admin edits, tests, disables and deletes a repository and a source, clears a source's
credential, and rotates and deletes a webhook endpoint, each destructive step through its
confirmation page."""

from __future__ import annotations

import pytest
import trustme
from django.db import transaction
from playwright.sync_api import Page, expect

from memoryadmin.audit import Actor
from reviews.models import Repository
from reviews.services.repositories import repository_create, repository_sync
from sources.fetchers import Credential
from sources.models import Source
from sources.services.lifecycle import source_add
from tests.e2e.conftest import login, shot
from tests.reviews.conftest import make_remote
from tests.sources.conftest import tls_server
from tests.sources.helpers import manifest_text, record_text, write_source
from webhooks.models import WebhookEndpoint
from webhooks.services.endpoints import endpoint_create

pytestmark = pytest.mark.e2e


def assert_fits(page: Page, width: int = 400) -> None:
    """At a narrow viewport the page scrolls down, never sideways."""
    page.set_viewport_size({"width": width, "height": 800})
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{page.url} is {overflow}px wider than the viewport"
    page.set_viewport_size({"width": 1280, "height": 800})


def test_it_edits_tests_disables_and_deletes_a_repository(
    page: Page, live_server, team, admin_user, settings, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    remote = make_remote(tmp_path / "git")
    with transaction.atomic():
        repository = repository_create(
            actor=Actor.system(), team=team, name="app", remote_url=remote.url + "-typo"
        )
    repository_sync(repository_id=repository.pk)  # the typo: it fails to sync

    login(page, live_server, "alice", "pw-alice")
    page.goto(f"/t/{team.slug}/reviews/")
    expect(page.get_by_role("alert")).to_contain_text("app failed to sync")
    page.goto(f"/t/{team.slug}/reviews/repositories/{repository.pk}/")
    page.get_by_role("link", name="Edit").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Edit app")
    page.get_by_label("Remote URL").fill(remote.url)
    page.get_by_role("button", name="Test the remote").click()
    expect(page.get_by_text("Test passed: branch main is at")).to_be_visible()
    assert Repository.objects.get(pk=repository.pk).remote_url.endswith("-typo")
    page.get_by_label("Name", exact=True).fill("app-memory")
    shot(page, "repository-edit")
    assert_fits(page)
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("app-memory")
    expect(page.locator("body")).to_contain_text(remote.url)

    page.get_by_role("link", name="Disable…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Disable this repository?")
    expect(page.locator("main")).to_contain_text("stops pushing decisions")
    shot(page, "repository-disable")
    assert_fits(page)
    page.get_by_role("button", name="Disable app-memory").click()
    expect(page.get_by_role("status").filter(has_text="Disabled.")).to_be_visible()
    page.get_by_role("button", name="Enable").click()
    expect(page.get_by_text("a sync has been queued")).to_be_visible()

    page.get_by_role("link", name="Delete…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Delete this repository?")
    expect(page.locator("main")).to_contain_text("open proposal")
    expect(page.locator("main")).to_contain_text(
        "The remote repository and its commits are not touched"
    )
    shot(page, "repository-delete")
    assert_fits(page)
    page.get_by_role("button", name="Delete app-memory").click()
    expect(page.get_by_text("Deleted app-memory")).to_be_visible()

    # The empty list says what goes there; adding tests the remote before anything is saved.
    page.goto(f"/t/{team.slug}/reviews/repositories/")
    expect(page.locator("main")).to_contain_text("No repositories yet. A repository is a git")
    page.locator("main").get_by_role("link", name="Add a repository").first.click()
    page.get_by_label("Name", exact=True).fill("app")
    page.get_by_label("Remote URL").fill(remote.url)
    page.get_by_role("button", name="Test the remote").click()
    expect(page.get_by_text("Test passed: branch main is at")).to_be_visible()
    assert not Repository.objects.filter(team=team).exists()
    shot(page, "repository-add")
    assert not Repository.objects.exists()


def test_it_tests_edits_and_disables_a_source_after_confirming(
    page: Page, live_server, team, admin_user, settings, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    settings.SOURCE_LOCAL_ROOTS = [str(tmp_path)]
    root = write_source(tmp_path / "notes", {"r1": record_text("r1", title="First")}, name="N")
    login(page, live_server, "alice", "pw-alice")
    page.goto(f"/t/{team.slug}/sources/add/")
    page.get_by_label("Directory path or HTTPS URL").fill(str(tmp_path / "nowhere"))
    page.get_by_role("button", name="Test").click()
    expect(page.locator("#id_location_error")).to_contain_text("not-found")
    page.get_by_label("Directory path or HTTPS URL").fill(str(root))
    page.get_by_role("button", name="Test").click()
    expect(page.get_by_text("Test passed: the manifest lists 1 record.")).to_be_visible()
    assert not Source.objects.exists()
    page.get_by_role("button", name="Add and preview").click()
    source = Source.objects.get()

    page.get_by_role("link", name="Edit").click()
    page.get_by_label("Name", exact=True).fill("Team notes")
    page.get_by_label("Refresh every (minutes)").fill("30")
    shot(page, "source-edit")
    assert_fits(page)
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Team notes")

    page.get_by_role("button", name="Approve").click()
    page.get_by_role("link", name="Disable…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Disable this source?")
    shot(page, "source-disable")
    assert_fits(page)
    assert Source.objects.get(pk=source.pk).state == "approved"
    page.get_by_role("button", name="Disable Team notes").click()
    expect(page.get_by_role("note")).to_contain_text("Disabled.")


def test_it_rotates_and_deletes_a_webhook_after_confirming(
    page: Page, live_server, team, admin_user, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.WEBHOOK_SECRET_OVERLAP_HOURS = 24
    with transaction.atomic():
        endpoint, old = endpoint_create(
            actor=Actor(user=admin_user),
            team=team,
            url="https://hooks.example.org/in",
            events=[],
        )
    login(page, live_server, "alice", "pw-alice")
    page.goto(f"/t/{team.slug}/webhooks/{endpoint.pk}/")
    page.get_by_role("link", name="Rotate secret…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Rotate the signing secret?")
    expect(page.locator("main")).to_contain_text("For 24 hours")
    shot(page, "webhook-rotate")
    assert_fits(page)
    page.get_by_role("button", name="Rotate the secret").click()
    new = page.locator("#new-webhook-secret").inner_text()
    assert new.startswith("whsec_") and new != old
    expect(page.get_by_text("The previous secret also signs deliveries")).to_be_visible()

    page.get_by_role("link", name="Delete endpoint…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Delete this webhook endpoint?")
    assert_fits(page)
    page.get_by_role("button", name="Delete the endpoint").click()
    expect(page.get_by_text("Endpoint https://hooks.example.org/in deleted.")).to_be_visible()
    assert not WebhookEndpoint.objects.exists()


def test_it_clears_a_sources_credential_only_after_saying_what_happens(
    page: Page, live_server, team, admin_user, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    ca_path = tmp_path / "ca.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_path))
    with tls_server(trustme.CA(), ("127.0.0.1", "localhost"), ca_path) as server:
        server.serve("memories.json", manifest_text(["r1"], name="Remote notes"))
        server.serve("records/r1.md", record_text("r1"))
        with transaction.atomic():
            source = source_add(
                actor=Actor.system(),
                team=team,
                location=server.base,
                credential=Credential(kind="bearer", token="s3cret-token"),
            )
        login(page, live_server, "alice", "pw-alice")
        page.goto(f"/t/{team.slug}/sources/{source.pk}/")
        expect(page.locator("#credential")).to_contain_text("A credential is set: Bearer token")
        page.get_by_role("link", name="Clear the credential…").click()

        # The confirmation says what goes and what the next refresh does; nothing changed yet.
        expect(page.get_by_role("heading", level=1)).to_have_text("Clear the credential?")
        expect(page.locator(".confirm")).to_contain_text("is deleted at once")
        expect(page.locator(".confirm")).to_contain_text("cannot be shown or restored")
        assert Source.objects.get(pk=source.pk).has_credential
        shot(page, "source-credential-clear")
        assert_fits(page)
        page.get_by_role("link", name="Cancel").click()
        assert Source.objects.get(pk=source.pk).has_credential

        page.get_by_role("link", name="Clear the credential…").click()
        page.get_by_role("button", name="Clear the credential").click()
        expect(page.get_by_text("Credential cleared: the next refresh sends none.")).to_be_visible()
        expect(page.locator("#credential")).to_contain_text("No credential is set")
        assert not Source.objects.get(pk=source.pk).has_credential
