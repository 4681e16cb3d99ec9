from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from memoryadmin.models import ApiToken, AuditEvent, Membership, Team


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_creates_a_team(db):
    out, _ = run("team_create", "gamma", "--name", "Gamma team")
    assert out == "gamma\n"
    team = Team.objects.get(slug="gamma")
    assert team.name == "Gamma team"
    event = AuditEvent.objects.get(action="team.create")
    assert (event.team, event.actor_label) == (team, "system")


@pytest.mark.parametrize("slug", ["alpha", "Not A Slug", "Beta", "gamma!", ""])
def test_it_refuses_a_duplicate_or_malformed_team(team, slug):
    with pytest.raises(CommandError):
        run("team_create", slug)
    assert Team.objects.count() == 1


def test_it_adds_and_changes_a_member(team, make_user):
    make_user("mia")
    out, _ = run("member_add", "alpha", "mia", "viewer")
    assert out == "mia is viewer of alpha\n"
    run("member_add", "alpha", "mia", "admin")
    assert Membership.objects.get(user__username="mia").role == "admin"
    assert AuditEvent.objects.filter(action="membership.set", data__user="mia").count() == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("alpha", "mia", "owner"), "invalid choice"),
        (("alpha", "nobody", "viewer"), "No user 'nobody'"),
        (("nope", "mia", "viewer"), "No team 'nope'"),
    ],
)
def test_it_refuses_a_bad_role_user_or_team(team, make_user, args, message):
    make_user("mia")
    with pytest.raises(CommandError, match=message):
        run("member_add", *args)
    assert not Membership.objects.filter(user__username="mia").exists()


def test_it_prints_only_the_token_on_stdout_and_it_works(team):
    out, err = run(
        "token_create", "alpha", "--name", "ci", "--scopes", "sources:read, context:read"
    )
    secret = out.removesuffix("\n")
    assert "\n" not in secret and secret.startswith("ma_")
    token = ApiToken.objects.get()
    assert f"ma_{token.prefix}" in err and secret not in err
    assert token.scopes == ["context:read", "sources:read"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    body = client.get("/api/me/").json()
    assert body["team"] == "alpha"
    assert body["token"]["name"] == "ci"


def test_it_sets_an_expiry_from_the_command(team):
    run("token_create", "alpha", "--name", "x", "--scopes", "sources:read", "--expires-days", "7")
    assert ApiToken.objects.get().expires_at is not None


@pytest.mark.parametrize(
    "args",
    [
        ("nope", "--name", "x", "--scopes", "sources:read"),
        ("alpha", "--name", "x", "--scopes", "root:all"),
        ("alpha", "--name", "x", "--scopes", ","),
        ("alpha", "--name", " ", "--scopes", "sources:read"),
        ("alpha", "--name", "x", "--scopes", "sources:read", "--expires-days", "0"),
    ],
)
def test_it_refuses_bad_token_arguments(team, args):
    with pytest.raises(CommandError):
        run("token_create", *args)
    assert not ApiToken.objects.exists()


@pytest.fixture
def secret(make_token, team) -> str:  # type: ignore[no-untyped-def]
    return make_token(team, ["sources:read"], name="deploy")


@pytest.mark.parametrize("form", ["prefix", "ma_prefix", "full secret"])
def test_it_revokes_by_prefix(secret, form):
    token = ApiToken.objects.get()
    arg = {"prefix": token.prefix, "ma_prefix": f"ma_{token.prefix}", "full secret": secret}[form]
    out, _ = run("token_revoke", arg)
    assert out == f"revoked deploy (ma_{token.prefix}…)\n"
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_it_revokes_by_team_and_name(secret, other_team, make_token):
    make_token(other_team, ["sources:read"], name="deploy")
    run("token_revoke", "alpha", "--name", "deploy")
    revoked = ApiToken.objects.exclude(revoked_at=None).get()
    assert revoked.team.slug == "alpha"
    assert ApiToken.objects.filter(revoked_at=None).get().team == other_team
    with pytest.raises(CommandError, match="No such token"):
        run("token_revoke", "alpha", "--name", "deploy")  # already revoked


def test_it_refuses_an_ambiguous_name(secret, make_token, team):
    make_token(team, ["sources:read"], name="deploy")
    with pytest.raises(CommandError, match="More than one"):
        run("token_revoke", "alpha", "--name", "deploy")
    assert not ApiToken.objects.exclude(revoked_at=None).exists()


@pytest.mark.parametrize("arg", ["00000000", "ma_"])
def test_it_refuses_an_unknown_prefix(secret, arg):
    with pytest.raises(CommandError, match="No such token"):
        run("token_revoke", arg)


@pytest.mark.parametrize("slug", ["a_b", "A", "a-", "a--b", "", "é"])
def test_it_refuses_a_team_slug_that_is_not_lowercase_words_and_hyphens(db, slug):
    with pytest.raises(CommandError, match="lowercase letters, digits and hyphens"):
        call_command("team_create", slug)
