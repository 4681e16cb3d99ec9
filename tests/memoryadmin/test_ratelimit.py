"""Failed sign-ins and failed tokens are counted; valid credentials are never refused for
another's failures (docs/architecture.md, security boundaries)."""

from __future__ import annotations

import uuid

import pytest

# every window-counting test sees one window (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("ratelimit_clock")

LOGIN = "/accounts/login/"


def fresh_ip() -> str:
    # A fresh address per use: counters live in the shared cache and are never cleared.
    n = uuid.uuid4().int
    return f"10.{n % 250}.{(n >> 8) % 250}.{(n >> 16) % 250 + 1}"


def fresh_name(stem: str) -> str:
    # Usernames are counted too, in the same shared cache: fresh ones per test run.
    return f"{stem}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def client_ip() -> str:
    return fresh_ip()


def login(client, username: str, password: str, ip: str) -> int:  # type: ignore[no-untyped-def]
    return client.post(
        LOGIN, {"username": username, "password": password}, REMOTE_ADDR=ip
    ).status_code


# --- sign-in ---------------------------------------------------------------------------------


def test_it_refuses_login_posts_over_the_rate_with_429(client, admin_user, settings, client_ip):
    settings.MEMORYADMIN_LOGIN_RATE = "3/m"
    statuses = [login(client, "alice", "wrong", client_ip) for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    # This address failed alice's account too often: it waits, the right password included.
    response = client.post(
        LOGIN, {"username": "alice", "password": "pw-alice"}, REMOTE_ADDR=client_ip
    )
    assert response.status_code == 429
    assert b"Too many failed sign-ins" in response.content
    assert "_auth_user_id" not in client.session


def test_it_lets_a_different_address_log_in(client, admin_user, settings, client_ip):
    settings.MEMORYADMIN_LOGIN_RATE = "1/m"
    login(client, "alice", "x", client_ip)
    login(client, "alice", "x", client_ip)
    assert login(client, "alice", "pw-alice", fresh_ip()) == 302


def test_it_counts_only_failed_sign_ins(client, make_user, team, settings, client_ip):
    settings.MEMORYADMIN_LOGIN_RATE = "2/m"
    settings.MEMORYADMIN_LOGIN_USER_RATE = "2/m"
    name = fresh_name("sam")
    make_user(name)
    statuses = []
    for _ in range(5):
        statuses.append(login(client, name, f"pw-{name}", client_ip))
        client.logout()
    assert statuses == [302] * 5


def test_it_signs_in_another_user_from_an_address_over_its_failure_limit(
    client, make_user, team, settings, client_ip
):
    settings.MEMORYADMIN_LOGIN_RATE = "10/m"
    a, b = fresh_name("ann"), fresh_name("ben")
    make_user(a, team=team, role="viewer")
    make_user(b, team=team, role="viewer")
    statuses = [login(client, a, "wrong", client_ip) for _ in range(11)]
    assert statuses == [200] * 10 + [429]
    # ben shares the address (an office NAT): his right password is not refused for ann's.
    assert login(client, b, f"pw-{b}", client_ip) == 302
    assert client.get("/api/me/").json()["user"] == b
    client.logout()
    # ann, from the address that failed her account eleven times, waits for the window...
    assert login(client, a, f"pw-{a}", client_ip) == 429
    # ...but signs in from her own machine: one address's failures never lock her out.
    assert login(client, a, f"pw-{a}", fresh_ip()) == 302


def test_it_gives_an_address_over_its_limit_one_check_per_username(
    client, make_user, team, settings, client_ip
):
    settings.MEMORYADMIN_LOGIN_RATE = "2/m"
    a, b = fresh_name("ann"), fresh_name("ben")
    make_user(a)
    make_user(b)
    assert [login(client, a, "wrong", client_ip) for _ in range(3)] == [200, 200, 429]
    # Over the limit, a username this address has not failed is checked once: a wrong
    # password is counted (429) and the next try for it waits, right password or not.
    assert login(client, b, "wrong", client_ip) == 429
    assert login(client, b, f"pw-{b}", client_ip) == 429
    assert login(client, b, f"pw-{b}", fresh_ip()) == 302


def test_it_locks_a_username_guessed_from_many_addresses(
    client, make_user, team, settings, client_ip
):
    settings.MEMORYADMIN_LOGIN_RATE = "100/m"
    settings.MEMORYADMIN_LOGIN_USER_RATE = "3/m"
    a, b = fresh_name("ann"), fresh_name("ben")
    make_user(a)
    make_user(b)
    statuses = [login(client, a, "wrong", fresh_ip()) for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    # Distributed guessing stops at the username: ann's account is locked for the window,
    # from every address, and her right password is not even checked.
    response = client.post(LOGIN, {"username": a.upper(), "password": "x"}, REMOTE_ADDR=client_ip)
    assert response.status_code == 429  # counted case-insensitively: no way around by case
    assert login(client, a, f"pw-{a}", client_ip) == 429
    assert "_auth_user_id" not in client.session
    # Other accounts are not affected.
    assert login(client, b, f"pw-{b}", client_ip) == 302


# --- API tokens ------------------------------------------------------------------------------


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
    assert "Retry-After" in bad[2]


def test_it_accepts_a_valid_token_after_31_failed_ones_from_its_address(
    api_client, team, make_token, settings, client_ip
):
    settings.MEMORYADMIN_TOKEN_FAILURE_RATE = "30/m"  # the production default
    good = make_token(team, ["sources:read"])
    bad = [
        api_client.get(
            "/api/me/",
            HTTP_AUTHORIZATION=f"Bearer ma_{uuid.uuid4().hex[:8]}_guess",
            REMOTE_ADDR=client_ip,
        ).status_code
        for _ in range(31)
    ]
    assert bad == [401] * 30 + [429]
    late = api_client.get("/api/me/", HTTP_AUTHORIZATION=f"Bearer {good}", REMOTE_ADDR=client_ip)
    assert late.status_code == 200
    assert late.json()["team"] == team.slug


def test_it_counts_failures_per_token_prefix_across_addresses(
    api_client, team, make_token, settings
):
    settings.MEMORYADMIN_TOKEN_FAILURE_RATE = "2/m"
    good = make_token(team, ["sources:read"])
    prefix = good.split("_")[1]
    guess = f"Bearer ma_{prefix}_{'x' * 43}"
    statuses = [
        api_client.get("/api/me/", HTTP_AUTHORIZATION=guess, REMOTE_ADDR=fresh_ip()).status_code
        for _ in range(3)
    ]
    assert statuses == [401, 401, 429]  # guessing one token's secret from many addresses
    # ... and the token itself, whose prefix was attacked, still works.
    ok = api_client.get("/api/me/", HTTP_AUTHORIZATION=f"Bearer {good}", REMOTE_ADDR=fresh_ip())
    assert ok.status_code == 200
