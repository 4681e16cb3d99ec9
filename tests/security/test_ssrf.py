"""SSRF: sources and webhooks never reach this server's internal addresses unless allowed.

Every spelling of loopback / link-local / unspecified is tried through the real refresh and the
real delivery attempt, with a live TLS server listening on 127.0.0.1 that must see nothing.
"""

from __future__ import annotations

import pytest
from django.db import transaction

from memoryadmin.audit import Actor
from sources.models import RunStatus
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from tests.sources.helpers import manifest_text, record_text
from webhooks import netguard
from webhooks.delivery import delivery_attempt
from webhooks.models import WebhookDelivery
from webhooks.services.endpoints import endpoint_create, endpoint_ping

INTERNAL_HOSTS = [
    "localhost",
    "127.0.0.1",
    "127.1",
    "[::1]",
    "0.0.0.0",
    "169.254.169.254",
    "2130706433",  # 127.0.0.1 as one decimal number
    "0x7f000001",
    "[::ffff:127.0.0.1]",
    "10.0.0.1",
]


@pytest.mark.parametrize("host", INTERNAL_HOSTS)
def test_it_refuses_a_source_on_an_internal_address(team, settings, https_server, host):
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    https_server.serve("memories.json", manifest_text(["a"]))
    https_server.serve("records/a.md", record_text("a"))
    location = f"https://{host}:{https_server.port}/src/"
    try:
        with transaction.atomic():
            source = source_add(actor=Actor.system(), team=team, location=location)
    except Exception as exc:  # refused at the door is fine too
        assert "location" in str(exc).lower() or "address" in str(exc).lower(), exc
        return
    source_approve(actor=Actor.system(), source=source)
    run = source_refresh(source_id=source.pk)
    assert run.status == RunStatus.FAILED
    assert run.error_code in ("private-address", "unreachable", "insecure-url"), run.error
    assert https_server.requests == []


@pytest.mark.parametrize("host", INTERNAL_HOSTS)
def test_it_refuses_a_webhook_to_an_internal_address(team, admin_user, settings, receiver, host):
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    settings.SOURCE_ALLOW_HTTP_LOOPBACK = True
    port = receiver.url().split(":")[2].split("/")[0]
    try:
        endpoint, _ = endpoint_create(
            actor=Actor(user=admin_user), team=team, url=f"https://{host}:{port}/hook", events=[]
        )
    except Exception as exc:  # refused at the door is fine too
        assert "url" in str(exc).lower() or "address" in str(exc).lower(), exc
        return
    delivery = endpoint_ping(actor=Actor(user=admin_user), endpoint=endpoint)
    delivery_attempt(delivery_id=delivery.pk)
    delivery = WebhookDelivery.objects.get(pk=delivery.pk)
    assert delivery.state == "failed", (delivery.state, delivery.last_error)
    assert receiver.requests == []


@pytest.mark.parametrize("host", ["127.1", "2130706433", "0x7f000001", "0177.0.0.1", "[::1]"])
def test_it_resolves_odd_spellings_before_checking(host):
    with pytest.raises(netguard.UrlRefused) as info:
        netguard.address_resolve(host.strip("[]"), 443, allow_private=False)
    assert info.value.code in ("address-not-public", "dns-failed")
