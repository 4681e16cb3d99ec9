from __future__ import annotations

import uuid

import pytest


def fresh_ip() -> str:
    # A fresh address per use: counters live in the shared cache and are never cleared.
    n = uuid.uuid4().int
    return f"10.{n % 250}.{(n >> 8) % 250}.{(n >> 16) % 250 + 1}"


@pytest.fixture
def client_ip() -> str:
    return fresh_ip()


def test_it_refuses_login_posts_over_the_rate_with_429(client, admin_user, settings, client_ip):
    settings.MEMORYADMIN_LOGIN_RATE = "3/m"
    statuses = [
        client.post(
            "/accounts/login/", {"username": "alice", "password": "wrong"}, REMOTE_ADDR=client_ip
        ).status_code
        for _ in range(4)
    ]
    assert statuses == [200, 200, 200, 429]
    # Even the right password is refused until the window passes.
    response = client.post(
        "/accounts/login/", {"username": "alice", "password": "pw-alice"}, REMOTE_ADDR=client_ip
    )
    assert response.status_code == 429
    assert b"Too many login attempts" in response.content


def test_it_lets_a_different_address_log_in(client, admin_user, settings, client_ip):
    settings.MEMORYADMIN_LOGIN_RATE = "1/m"
    client.post("/accounts/login/", {"username": "alice", "password": "x"}, REMOTE_ADDR=client_ip)
    response = client.post(
        "/accounts/login/", {"username": "alice", "password": "pw-alice"}, REMOTE_ADDR=fresh_ip()
    )
    assert response.status_code == 302


def test_it_throttles_failed_token_guesses_but_counts_no_successes(
    api_client, team, make_token, settings, client_ip
):
    settings.MEMORYADMIN_TOKEN_FAILURE_RATE = "2/m"
    good = make_token(team, ["sources:read"])
    for _ in range(5):
        ok = api_client.get("/api/me/", HTTP_AUTHORIZATION=f"Bearer {good}", REMOTE_ADDR=client_ip)
        assert ok.status_code == 200
    bad = [
        api_client.get("/api/me/", HTTP_AUTHORIZATION="Bearer ma_nope_nope", REMOTE_ADDR=client_ip)
        for _ in range(3)
    ]
    assert [r.status_code for r in bad] == [401, 401, 429]
    assert bad[2].json()["error"]["code"] == "throttled"
    # Once limited, even a valid token from that address waits.
    late = api_client.get("/api/me/", HTTP_AUTHORIZATION=f"Bearer {good}", REMOTE_ADDR=client_ip)
    assert late.status_code == 429
