"""A team admin sends a test event to a real receiver on 127.0.0.1 and reads its answer, then
rotates the secret and ends the overlap after confirming, in Debian's Chromium."""

from __future__ import annotations

import pytest
from django.db import transaction
from playwright.sync_api import Page, expect

from memoryadmin.audit import Actor
from tests.e2e.conftest import login, shot
from tests.webhooks.conftest import Receiver, Reply
from webhooks.models import WebhookEndpoint
from webhooks.services.endpoints import endpoint_create

pytestmark = pytest.mark.e2e


def test_it_sends_a_test_and_ends_a_rotation_overlap(
    page: Page, live_server, team, admin_user, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.SOURCE_ALLOW_HTTP_LOOPBACK = True
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = True
    settings.WEBHOOK_SECRET_OVERLAP_HOURS = 24
    receiver = Receiver()
    try:
        with transaction.atomic():
            endpoint, _ = endpoint_create(
                actor=Actor(user=admin_user), team=team, url=receiver.url(), events=[]
            )
        login(page, live_server, "alice", "pw-alice")
        page.goto(f"/t/{team.slug}/webhooks/{endpoint.pk}/")
        page.get_by_role("button", name="Send test").click()
        expect(
            page.get_by_text("Test event sent. Delivered: the receiver answered HTTP 200 OK.")
        ).to_be_visible()
        deliveries = page.locator("#deliveries tbody tr")
        expect(deliveries).to_have_count(1)
        expect(deliveries.first).to_contain_text("succeeded")
        assert [r.headers["X-Memoryadmin-Event"] for r in receiver.requests] == ["ping"]

        receiver.plan = [Reply(401, body=b"bad signature")]
        page.get_by_role("button", name="Send test").click()
        expect(
            page.get_by_text("Test event failed. The receiver answered HTTP 401 Unauthorized")
        ).to_be_visible()
        expect(deliveries).to_have_count(2)
        expect(deliveries.first).to_contain_text("failed")
        shot(page, "webhook-test-failed")

        page.get_by_role("link", name="Rotate secret…").click()
        page.get_by_role("button", name="Rotate the secret").click()
        page.get_by_role("link", name="End the overlap now…").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("End the overlap now?")
        expect(page.locator("main")).to_contain_text("in 23 hours")
        shot(page, "webhook-end-overlap")
        page.get_by_role("button", name="End the overlap").click()
        expect(page.get_by_text("Overlap ended: only the current secret signs")).to_be_visible()
        expect(page.get_by_role("link", name="End the overlap now…")).to_have_count(0)
        assert WebhookEndpoint.objects.get().previous_secret_expires_at is None
    finally:
        receiver.close()
