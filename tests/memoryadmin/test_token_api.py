"""GET/POST /api/tokens/ and DELETE /api/tokens/<id>/ (scope team:manage), the revoke
confirmation step, the Agent token preset and the client snippets shown once."""

from __future__ import annotations

import json
import shlex
import tomllib

from django.test import Client
from rest_framework.test import APIClient

from memoryadmin.audit import Actor
from memoryadmin.models import ApiToken, AuditEvent, Role, Scope, TokenKind
from memoryadmin.snippets import client_snippets
from memoryadmin.tokens import token_create


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def _admin_token(user, team, scopes) -> str:  # type: ignore[no-untyped-def]
    return token_create(actor=Actor(user=user), team=team, name="admin-cli", scopes=scopes)[1]


def test_it_lists_creates_and_revokes_tokens_with_team_manage(admin_user, team):
    client = bearer(_admin_token(admin_user, team, [Scope.TEAM_MANAGE, Scope.CONTEXT_READ]))
    created = client.post(
        "/api/tokens/", {"name": "agent", "scopes": ["context:read"]}, format="json"
    )
    assert created.status_code == 201 and created["Cache-Control"] == "no-store"
    body = created.json()
    assert body["secret"].startswith(f"ma_{body['prefix']}_")
    assert body["kind"] == "personal" and body["created_by"] == "alice"  # its person's token
    assert bearer(body["secret"]).get("/api/me/").json()["token"]["name"] == "agent"
    listed = client.get("/api/tokens/").json()
    assert {t["name"] for t in listed} == {"admin-cli", "agent"}
    assert "secret" not in json.dumps(listed) and "secret_hash" not in json.dumps(listed)
    revoked = client.delete(f"/api/tokens/{body['id']}/")
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    assert bearer(body["secret"]).get("/api/me/").status_code == 401
    actions = list(
        AuditEvent.objects.filter(team=team, action__startswith="token.").values_list(
            "action", "actor_label"
        )
    )
    assert any(a == "token.revoke" and label.startswith("token:admin-cli") for a, label in actions)


def test_it_lets_a_token_grant_only_the_scopes_it_holds(admin_user, team):
    client = bearer(_admin_token(admin_user, team, [Scope.TEAM_MANAGE]))
    refused = client.post(
        "/api/tokens/", {"name": "wide", "scopes": ["bundles:import"]}, format="json"
    )
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "scope-beyond-token"
    assert refused.json()["error"]["details"] == {"scopes": ["bundles:import"]}
    assert not ApiToken.objects.filter(name="wide").exists()


def test_it_gives_team_manage_only_to_admins_tokens(admin_user, make_user, team):
    """A personal token acts with at most its creator's role: a demoted admin's token loses it."""
    secret = _admin_token(admin_user, team, [Scope.TEAM_MANAGE])
    assert bearer(secret).get("/api/tokens/").status_code == 200
    admin_user.memberships.filter(team=team).update(role=Role.REVIEWER)
    response = bearer(secret).get("/api/tokens/")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "insufficient-scope"
    reviewer = make_user("rex", team=team, role=Role.REVIEWER)
    session = APIClient()
    session.force_login(reviewer)
    assert session.get("/api/tokens/?team=alpha").status_code == 403


def test_it_never_reaches_another_teams_tokens(admin_user, team, other_team, make_token):
    theirs, _ = token_create(
        actor=Actor.system(), team=other_team, name="theirs", scopes=["context:read"]
    )
    client = bearer(make_token(team, [Scope.TEAM_MANAGE]))
    assert "theirs" not in json.dumps(client.get("/api/tokens/").json())
    assert client.delete(f"/api/tokens/{theirs.pk}/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None


def test_it_refuses_bad_token_input_with_a_400(admin_user, team):
    client = bearer(_admin_token(admin_user, team, [Scope.TEAM_MANAGE]))
    for body in [{}, {"name": "x", "scopes": []}, {"name": "x", "scopes": ["root:all"]}]:
        response = client.post("/api/tokens/", body, format="json")
        assert response.status_code == 400, body
        assert response.json()["error"]["code"]


def test_it_asks_before_revoking_and_says_what_happens(admin_user, team):
    token, secret = token_create(
        actor=Actor(user=admin_user), team=team, name="ci", scopes=["context:read"]
    )
    client = Client()
    client.force_login(admin_user)
    page = client.get(f"/t/{team.slug}/tokens/{token.pk}/revoke/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "401 token-revoked" in text and "can not be undone" in text
    token.refresh_from_db()
    assert token.revoked_at is None  # looking changes nothing
    assert client.post(f"/t/{team.slug}/tokens/{token.pk}/revoke/").status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert bearer(secret).get("/api/me/").status_code == 401


def test_it_shows_the_agent_preset_and_the_snippets_once(admin_user, team):
    client = Client()
    client.force_login(admin_user)
    preset = client.get(f"/t/{team.slug}/tokens/?preset=agent").content.decode()
    assert 'value="context:read"' in preset and 'value="agent"' in preset
    assert preset.count("checked") == 2  # context:read and reviews:propose
    created = client.post(
        f"/t/{team.slug}/tokens/",
        {"name": "agent", "scopes": ["context:read", "reviews:propose"]},
    )
    assert created["Cache-Control"] == "no-store"
    text = created.content.decode()
    token = ApiToken.objects.get(team=team, name="agent")
    assert token.kind == TokenKind.PERSONAL
    assert "claude mcp add --transport http memoryadmin http://testserver/mcp" in text
    assert text.count(f"ma_{token.prefix}_") >= 4  # the token box, Claude, Codex, Cursor
    again = client.get(f"/t/{team.slug}/tokens/").content.decode()
    assert "claude mcp add" not in again and f"ma_{token.prefix}_" not in again


def test_it_builds_snippets_each_format_reads_back():
    url, secret = "https://memory.example.org/mcp", "ma_1234abcd_x'y\"z"
    snippets = {s.slug: s.text for s in client_snippets(url, secret)}
    claude = shlex.split(snippets["claude"].replace("\\\n", " "))
    assert claude[:6] == ["claude", "mcp", "add", "--transport", "http", "memoryadmin"]
    assert claude[6:] == [url, "--header", f"Authorization: Bearer {secret}"]
    export, toml_text = snippets["codex"].split("\n\n", 1)
    assert shlex.split(export) == ["export", f"MEMORYADMIN_TOKEN={secret}"]
    codex = tomllib.loads(toml_text)["mcp_servers"]["memoryadmin"]
    assert codex == {"url": url, "bearer_token_env_var": "MEMORYADMIN_TOKEN"}
    cursor = json.loads(snippets["cursor"].split("\n\n", 1)[1])["mcpServers"]["memoryadmin"]
    assert cursor == {"url": url, "headers": {"Authorization": "Bearer ${env:MEMORYADMIN_TOKEN}"}}
    vscode = json.loads(snippets["vscode"])
    assert vscode["inputs"][0]["password"] is True
    assert vscode["servers"]["memoryadmin"]["url"] == url


def test_it_filters_tokens_by_the_day_they_were_made_on_the_page_and_the_api(admin_user, team):
    from datetime import timedelta

    from django.utils import timezone

    client = bearer(_admin_token(admin_user, team, [Scope.TEAM_MANAGE]))
    old, _ = token_create(
        actor=Actor(user=admin_user), team=team, name="old-ci", scopes=[Scope.CONTEXT_READ]
    )
    ApiToken.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=40))
    today = timezone.localdate().isoformat()
    cutoff = (timezone.localdate() - timedelta(days=39)).isoformat()
    assert [t["name"] for t in client.get("/api/tokens/", {"after": today}).json()] == ["admin-cli"]
    assert [t["name"] for t in client.get("/api/tokens/", {"before": cutoff}).json()] == ["old-ci"]
    page = Client()
    page.force_login(admin_user)
    html = page.get(f"/t/{team.slug}/tokens/", {"before": cutoff}).content.decode()
    assert "old-ci" in html and "admin-cli" not in html
    bad = client.get("/api/tokens/", {"after": "soon"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid-filter"
