from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from memoryadmin.audit import Actor
from memoryadmin.models import ApiToken, AuditEvent, Role, Scope, token_hash
from memoryadmin.tokens import token_create, token_revoke


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def every_stored_value() -> list[str]:
    """Every column of every row of every table in the database, as text."""
    values: list[str] = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608
            values.extend(str(value) for row in cursor.fetchall() for value in row)
    return values


def assert_error(response, status: int, code: str) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    return body["error"]


# --- creation and storage ------------------------------------------------------------------


def test_it_stores_only_the_hash_and_prefix_of_a_token(team):
    token, secret = token_create(
        actor=Actor.system(), team=team, name="ci", scopes=[Scope.SOURCES_READ]
    )
    assert re.fullmatch(r"ma_[0-9a-f]{8}_[A-Za-z0-9_-]{43}", secret)
    token.refresh_from_db()
    assert token.secret_hash == token_hash(secret)
    assert secret.startswith(f"ma_{token.prefix}_")
    stored = every_stored_value()
    assert not [value for value in stored if secret in value]
    random_part = secret.split("_", 2)[2]  # ma_<prefix>_<random>; the random part may hold "_"
    assert len(random_part) == 43
    assert not [value for value in stored if random_part[:16] in value]


def test_it_shows_the_secret_once_on_the_tokens_page(client, admin_user, team):
    client.force_login(admin_user)
    response = client.post(
        f"/t/{team.slug}/tokens/",
        {"name": "exporter", "scopes": [Scope.BUNDLES_EXPORT, Scope.CONTEXT_READ]},
    )
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    html = response.content.decode()
    match = re.search(r'id="new-token-secret">(ma_[^<]+)<', html)
    assert match, html
    secret = match.group(1)
    # the token box and the client snippets shown with it (Claude Code, Codex, Cursor)
    assert html.count(secret) == 4
    token = ApiToken.objects.get(team=team, name="exporter")
    assert token.secret_hash == token_hash(secret)
    assert token.scopes == [Scope.BUNDLES_EXPORT, Scope.CONTEXT_READ]
    assert token.created_by == admin_user

    later = client.get(f"/t/{team.slug}/tokens/").content.decode()
    assert secret not in later
    assert "new-token-secret" not in later
    assert f"ma_{token.prefix}…" in later
    assert bearer(secret).get("/api/me/").status_code == 200


def test_it_rejects_an_invalid_token_form_without_creating_anything(client, admin_user, team):
    client.force_login(admin_user)
    response = client.post(f"/t/{team.slug}/tokens/", {"name": "x", "scopes": ["root:all"]})
    assert response.status_code == 200
    assert "new-token-secret" not in response.content.decode()
    assert not ApiToken.objects.exists()


def test_it_writes_audit_events_for_create_and_revoke(admin_user, team):
    actor = Actor(user=admin_user)
    token, _ = token_create(actor=actor, team=team, name="ci", scopes=[Scope.SOURCES_READ])
    token_revoke(actor=actor, token=token)
    token_revoke(actor=actor, token=token)  # a second revoke changes nothing
    events = list(AuditEvent.objects.filter(action__startswith="token.").order_by("id"))
    assert [e.action for e in events] == ["token.create", "token.revoke"]
    assert all(e.team == team and e.actor_user == admin_user for e in events)
    assert events[0].target_id == str(token.pk)
    assert events[0].data["prefix"] == token.prefix
    assert events[0].actor_label == "user:alice"


# --- authentication --------------------------------------------------------------------------


def test_it_authenticates_a_token_on_api_me_without_revealing_secrets(make_token, team):
    secret = make_token(team, [Scope.SOURCES_READ, Scope.CONTEXT_READ], name="reader")
    response = bearer(secret).get("/api/me/")
    assert response.status_code == 200
    body = response.json()
    token = ApiToken.objects.get()
    assert body == {
        "team": team.slug,
        "token": {
            "name": "reader",
            "prefix": token.prefix,
            "scopes": [Scope.CONTEXT_READ, Scope.SOURCES_READ],
            "expires_at": None,
            "kind": "team",
            "active_scopes": [Scope.CONTEXT_READ, Scope.SOURCES_READ],
        },
    }
    assert secret not in response.content.decode()
    assert token.secret_hash not in response.content.decode()


def test_it_reports_expiry_on_api_me(make_token, team):
    secret = make_token(team, [Scope.SOURCES_READ], expires_days=30)
    expires = bearer(secret).get("/api/me/").json()["token"]["expires_at"]
    assert expires.startswith(str((timezone.now() + timedelta(days=30)).date()))


def test_it_describes_a_session_user_on_api_me(client, make_user, team, other_team):
    user = make_user("both", team=team, role=Role.REVIEWER)
    from memoryadmin.services import membership_set

    membership_set(actor=Actor.system(), team=other_team, user=user, role=Role.VIEWER)
    client.force_login(user)
    body = client.get("/api/me/").json()
    assert body == {
        "user": "both",
        "is_superuser": False,
        "teams": [
            {"slug": "alpha", "name": "Alpha", "role": "reviewer"},
            {"slug": "beta", "name": "Beta", "role": "viewer"},
        ],
    }


def test_it_gives_a_superuser_every_team_as_admin_on_api_me(client, make_user, team, other_team):
    client.force_login(make_user("root", is_superuser=True))
    teams = client.get("/api/me/").json()["teams"]
    assert [(t["slug"], t["role"]) for t in teams] == [("alpha", "admin"), ("beta", "admin")]


def test_it_answers_401_with_a_bearer_challenge_without_credentials(api_client, db):
    error = assert_error(api_client.get("/api/me/"), 401, "not-authenticated")
    assert error["details"] is None
    assert api_client.get("/api/me/")["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize(
    ("header", "code"),
    [
        ("Bearer ma_00000000_notarealtoken", "token-unknown"),
        ("Bearer", "token-malformed"),
        ("Bearer two parts", "token-malformed"),
        ("bearer ma_00000000_x extra", "token-malformed"),
    ],
)
def test_it_rejects_unknown_and_malformed_tokens(db, header, code):
    client = APIClient()
    response = client.get("/api/me/", HTTP_AUTHORIZATION=header)
    assert_error(response, 401, code)
    assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize("header", ["", " ", "\t"])
def test_it_treats_a_blank_authorization_header_as_no_credentials(db, header):
    response = APIClient().get("/api/me/", HTTP_AUTHORIZATION=header)
    assert_error(response, 401, "not-authenticated")


def test_it_rejects_a_revoked_token(make_token, team):
    secret = make_token(team, [Scope.SOURCES_READ])
    assert bearer(secret).get("/api/me/").status_code == 200
    token_revoke(actor=Actor.system(), token=ApiToken.objects.get())
    response = bearer(secret).get("/api/me/")
    assert_error(response, 401, "token-revoked")
    assert response["WWW-Authenticate"] == "Bearer"


def test_it_rejects_an_expired_token(make_token, team):
    secret = make_token(team, [Scope.SOURCES_READ], expires_days=1)
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = bearer(secret).get("/api/me/")
    assert_error(response, 401, "token-expired")
    assert response["WWW-Authenticate"] == "Bearer"


def test_it_records_last_use_at_most_once_a_minute(make_token, team):
    secret = make_token(team, [Scope.SOURCES_READ])
    client = bearer(secret)
    assert ApiToken.objects.get().last_used_at is None

    client.get("/api/me/")
    first = ApiToken.objects.get().last_used_at
    assert first is not None and timezone.now() - first < timedelta(seconds=10)

    with CaptureQueriesContext(connection) as queries:
        client.get("/api/me/")
    assert not [q for q in queries if q["sql"].lstrip().upper().startswith("UPDATE")]
    assert ApiToken.objects.get().last_used_at == first

    stale = timezone.now() - timedelta(minutes=2)
    ApiToken.objects.update(last_used_at=stale)
    client.get("/api/me/")
    assert ApiToken.objects.get().last_used_at > stale + timedelta(minutes=1)


# --- scopes ----------------------------------------------------------------------------------


@pytest.mark.urls("tests.memoryadmin.urls_scope")
def test_it_allows_a_token_with_the_scope(make_token, team):
    response = bearer(make_token(team, [Scope.SOURCES_READ])).get("/api/scoped/")
    assert response.status_code == 200
    assert response.json() == {"team": team.slug}


@pytest.mark.urls("tests.memoryadmin.urls_scope")
def test_it_refuses_a_token_without_the_scope_with_403_insufficient_scope(make_token, team):
    client = bearer(make_token(team, [Scope.SOURCES_READ]))
    error = assert_error(client.post("/api/scoped/", {}, format="json"), 403, "insufficient-scope")
    assert "reviews:write" in error["message"]
    other = bearer(make_token(team, [Scope.CONTEXT_READ], name="ctx"))
    assert_error(other.get("/api/scoped/"), 403, "insufficient-scope")


@pytest.mark.urls("tests.memoryadmin.urls_scope")
def test_it_refuses_methods_no_scope_is_declared_for(make_token, team):
    client = bearer(make_token(team, list(Scope.values)))
    assert_error(client.get("/api/undeclared/"), 403, "forbidden")
    # A method the view does not implement is not a permission question.
    assert_error(client.put("/api/scoped/", {}, format="json"), 405, "method-not-allowed")


@pytest.mark.urls("tests.memoryadmin.urls_scope")
def test_it_maps_scopes_to_roles_for_session_users(client, viewer_user, reviewer_user, team):
    client.force_login(viewer_user)
    assert client.get("/api/scoped/").json() == {"team": team.slug}
    response = client.post("/api/scoped/", "{}", content_type="application/json")
    assert_error(response, 403, "insufficient-role")
    client.force_login(reviewer_user)
    response = client.post("/api/scoped/", "{}", content_type="application/json")
    assert response.status_code == 200


@pytest.mark.urls("tests.memoryadmin.urls_scope")
def test_it_asks_a_session_user_with_many_teams_to_name_one(client, make_user, team, other_team):
    from memoryadmin.services import membership_set

    user = make_user("two", team=team, role=Role.VIEWER)
    membership_set(actor=Actor.system(), team=other_team, user=user, role=Role.VIEWER)
    client.force_login(user)
    error = assert_error(client.get("/api/scoped/"), 400, "team-required")
    assert "team" in error["details"]
    assert client.get("/api/scoped/?team=beta").json() == {"team": "beta"}
    assert_error(client.get("/api/scoped/?team=nope"), 404, "not-found")


# --- revocation ------------------------------------------------------------------------------


def test_it_revokes_a_token_from_the_page_with_csrf(admin_user, team, make_token):
    secret = make_token(team, [Scope.SOURCES_READ], name="old")
    token = ApiToken.objects.get()
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    url = f"/t/{team.slug}/tokens/{token.pk}/revoke/"

    assert client.post(url).status_code == 403  # no CSRF token
    token.refresh_from_db()
    assert token.revoked_at is None

    client.get(f"/t/{team.slug}/tokens/")
    csrf = client.cookies["csrftoken"].value
    response = client.post(url, {"csrfmiddlewaretoken": csrf})
    assert response.status_code == 302
    assert response["Location"] == f"/t/{team.slug}/tokens/"
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert token.revoked_by == admin_user
    assert_error(bearer(secret).get("/api/me/"), 401, "token-revoked")
    assert AuditEvent.objects.filter(action="token.revoke", actor_user=admin_user).count() == 1


def test_it_refuses_revoking_by_get_or_another_teams_token(
    client, admin_user, team, other_team, make_token
):
    make_token(other_team, [Scope.SOURCES_READ])
    foreign = ApiToken.objects.get()
    client.force_login(admin_user)
    # GET is the confirmation step (tests/memoryadmin/test_token_api.py); never a revoke
    assert client.get(f"/t/{team.slug}/tokens/{foreign.pk}/revoke/").status_code == 404
    assert client.post(f"/t/{team.slug}/tokens/{foreign.pk}/revoke/").status_code == 404
    foreign.refresh_from_db()
    assert foreign.revoked_at is None


def test_it_refuses_revoking_for_a_reviewer(client, reviewer_user, team, make_token):
    make_token(team, [Scope.SOURCES_READ])
    token = ApiToken.objects.get()
    client.force_login(reviewer_user)
    assert client.post(f"/t/{team.slug}/tokens/{token.pk}/revoke/").status_code == 403
    token.refresh_from_db()
    assert token.revoked_at is None


def test_it_revokes_a_token_with_the_command(make_token, team):
    secret = make_token(team, [Scope.SOURCES_READ], name="cli")
    out = StringIO()
    call_command("token_revoke", secret[:11], stdout=out)
    assert "revoked cli" in out.getvalue()
    assert ApiToken.objects.get().revoked_at is not None
    event = AuditEvent.objects.get(action="token.revoke")
    assert event.actor_label == "system"


def test_it_answers_405_not_403_to_a_method_the_endpoint_does_not_have(token_client, team):
    client = token_client(team, ["sources:read"])
    response = client.delete("/api/sources/")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method-not-allowed"
