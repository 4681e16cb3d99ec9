"""The client address, for rate limits and the audit log alike: X-Forwarded-For counts only
when the direct peer is a configured trusted proxy (MEMORYADMIN_TRUSTED_PROXIES)."""

from __future__ import annotations

import uuid

import pytest
from rest_framework.test import APIClient

from memoryadmin.env import ConfigError, env_networks
from memoryadmin.models import AuditEvent

# every window-counting test sees one window (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("ratelimit_clock")

PROXY = "10.250.0.7"  # our TLS proxy


def fresh_ip(first: int = 10) -> str:
    # A fresh address per use: counters live in the shared cache and are never cleared.
    n = uuid.uuid4().int
    return f"{first}.{n % 250}.{(n >> 8) % 250}.{(n >> 16) % 250 + 1}"


def create_token_from(client, team, **meta) -> AuditEvent:  # type: ignore[no-untyped-def]
    response = client.post(
        f"/t/{team.slug}/tokens/", {"name": "ci", "scopes": ["sources:read"]}, **meta
    )
    assert response.status_code == 200
    return AuditEvent.objects.filter(action="token.create").latest("id")


def bad_token(api: APIClient, **meta) -> int:  # type: ignore[no-untyped-def]
    guess = f"Bearer ma_{uuid.uuid4().hex[:8]}_guess"  # a fresh prefix: only the address counts
    return api.get("/api/me/", HTTP_AUTHORIZATION=guess, **meta).status_code


def test_it_ignores_x_forwarded_for_from_a_peer_it_does_not_trust(
    client, admin_user, team, settings
):
    settings.MEMORYADMIN_TRUSTED_PROXIES = [f"{PROXY}/32"]
    client.force_login(admin_user)
    peer = fresh_ip()
    event = create_token_from(client, team, REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert event.ip_address == peer


def test_it_records_the_client_behind_a_trusted_proxy_in_the_audit_log(
    client, admin_user, team, settings
):
    settings.MEMORYADMIN_TRUSTED_PROXIES = ["10.250.0.0/24", "10.251.0.1"]
    client.force_login(admin_user)
    event = create_token_from(
        client,
        team,
        REMOTE_ADDR=PROXY,
        # what the client claimed on the left, then what our two proxies appended
        HTTP_X_FORWARDED_FOR="198.51.100.66, 203.0.113.9, 10.251.0.1",
    )
    assert event.ip_address == "203.0.113.9"


def test_it_never_trusts_x_forwarded_for_when_no_proxy_is_configured(
    client, admin_user, team, settings
):
    settings.MEMORYADMIN_TRUSTED_PROXIES = []
    client.force_login(admin_user)
    event = create_token_from(
        client, team, REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.9"
    )
    assert event.ip_address == "127.0.0.1"


def test_it_counts_failures_per_client_behind_the_trusted_proxy(db, settings):
    settings.MEMORYADMIN_TRUSTED_PROXIES = [PROXY]
    settings.MEMORYADMIN_TOKEN_FAILURE_RATE = "2/m"
    api = APIClient()
    noisy, quiet = fresh_ip(100), fresh_ip(101)
    via = {"REMOTE_ADDR": PROXY}
    statuses = [bad_token(api, HTTP_X_FORWARDED_FOR=noisy, **via) for _ in range(3)]
    assert statuses == [401, 401, 429]
    # another client of the same proxy is not throttled for the first one's failures
    assert bad_token(api, HTTP_X_FORWARDED_FOR=quiet, **via) == 401


def test_it_does_not_let_an_untrusted_peer_escape_its_limit_by_claiming_addresses(db, settings):
    settings.MEMORYADMIN_TRUSTED_PROXIES = [PROXY]
    settings.MEMORYADMIN_TOKEN_FAILURE_RATE = "2/m"
    api = APIClient()
    peer = fresh_ip()
    statuses = [
        bad_token(api, REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=fresh_ip(102)) for _ in range(3)
    ]
    assert statuses == [401, 401, 429]


def test_it_signs_in_behind_the_proxy_while_another_client_is_locked_out(
    client, make_user, settings
):
    settings.MEMORYADMIN_TRUSTED_PROXIES = [PROXY]
    settings.MEMORYADMIN_LOGIN_RATE = "2/m"
    name = f"pat-{uuid.uuid4().hex[:8]}"
    make_user(name)
    guesser = {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": fresh_ip(103)}
    statuses = [
        client.post("/accounts/login/", {"username": name, "password": "x"}, **guesser).status_code
        for _ in range(3)
    ]
    assert statuses == [200, 200, 429]
    response = client.post(
        "/accounts/login/",
        {"username": name, "password": f"pw-{name}"},
        REMOTE_ADDR=PROXY,
        HTTP_X_FORWARDED_FOR=fresh_ip(104),
    )
    assert response.status_code == 302


@pytest.mark.parametrize("value", ["10.0.0.0/8,nonsense", "10.0.0.300", "proxy.internal"])
def test_it_refuses_a_trusted_proxy_setting_it_can_not_read(monkeypatch, value):
    monkeypatch.setenv("MEMORYADMIN_TRUSTED_PROXIES", value)
    with pytest.raises(ConfigError, match="MEMORYADMIN_TRUSTED_PROXIES"):
        env_networks("MEMORYADMIN_TRUSTED_PROXIES")


def test_it_reads_addresses_and_networks_for_trusted_proxies(monkeypatch):
    monkeypatch.setenv("MEMORYADMIN_TRUSTED_PROXIES", " 10.0.0.1, 172.16.0.0/12 ,::1 ")
    assert env_networks("MEMORYADMIN_TRUSTED_PROXIES") == ["10.0.0.1", "172.16.0.0/12", "::1"]
