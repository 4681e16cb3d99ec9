"""A token acts for the person who made it, never beyond them; a team token is no person.

Issue #13 items 5 and 6, through HTTP, on real git (a bare remote over file://)."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from memoryadmin.audit import Actor
from memoryadmin.models import ApiToken, AuditEvent, Membership, Role, TokenKind
from reviews.models import Approval, Decision, Memory, PushState
from reviews.services.repositories import repository_create, repository_sync
from reviews.services.routing import review_settings_update
from tests.reviews.conftest import Remote, make_remote

SQLITE = "20260201-use-sqlite"  # a decision: needs two approvals when the team asks for them
ATTEMPT = "20260203-cache-attempt"  # an attempt: one approval always suffices


def proposal(repository, memory_id: str) -> Memory:  # type: ignore[no-untyped-def]
    return Memory.objects.get(repository=repository, memory_id=memory_id)


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def session(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_login(user)
    return client


def token_from_page(user, team, name: str, scopes: list[str]) -> str:  # type: ignore[no-untyped-def]
    """Create a token the way a person does: on the team's tokens page."""
    response = session(user).post(f"/t/{team.slug}/tokens/", {"name": name, "scopes": scopes})
    assert response.status_code == 200, response.content
    match = re.search(r'id="new-token-secret">(ma_[^<]+)<', response.content.decode())
    assert match, response.content
    return match.group(1)


def team_token(team, name: str, scopes: str) -> str:  # type: ignore[no-untyped-def]
    """Create a token the way a script does: `manage.py token_create`."""
    out = StringIO()
    call_command("token_create", team.slug, name=name, scopes=scopes, stdout=out, stderr=StringIO())
    return out.getvalue().strip()


def approve(client, memory: Memory):  # type: ignore[no-untyped-def]
    return client.post(f"/api/reviews/proposals/{memory.pk}/approve/", {}, format="json")


@pytest.fixture
def remote(tmp_path) -> Remote:
    return make_remote(tmp_path / "git")


@pytest.fixture
def repository(team, remote, settings, tmp_path):  # type: ignore[no-untyped-def]
    """The reviews tests' seeded repository (tests/reviews/conftest.py), synced."""
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    repo = repository_create(actor=Actor.system(), team=team, name="app", remote_url=remote.url)
    repository_sync(repository_id=repo.pk)
    repo.refresh_from_db()
    return repo


@pytest.fixture
def ada(make_user, team):  # type: ignore[no-untyped-def]
    """A second admin (admins make tokens on the page and may review)."""
    return make_user("ada", team=team, role=Role.ADMIN)


@pytest.fixture
def two(repository, admin_user):  # type: ignore[no-untyped-def]
    review_settings_update(
        actor=Actor(user=admin_user), team=repository.team, require_two_approvals=True
    )
    return repository


# --- item 5: tokens end with their person ---------------------------------------------------


def test_it_revokes_a_removed_members_tokens_and_audits_each(ada, admin_user, team, other_team):
    secret = token_from_page(ada, team, "ada-ci", ["sources:read"])
    kept = team_token(team, "deploy", "sources:read")
    assert ApiToken.objects.get(name="ada-ci").kind == TokenKind.PERSONAL
    assert bearer(secret).get("/api/sources/").status_code == 200

    membership = Membership.objects.get(user=ada, team=team)
    admin = session(admin_user)
    confirm = admin.get(f"/t/{team.slug}/members/{membership.pk}/remove/")
    assert b"ada-ci" in confirm.content  # the page names the token that goes
    response = admin.post(f"/t/{team.slug}/members/{membership.pk}/remove/")
    assert response.status_code == 302

    refused = bearer(secret).get("/api/sources/")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "token-revoked"
    token = ApiToken.objects.get(name="ada-ci")
    assert token.revoked_by == admin_user
    (event,) = AuditEvent.objects.filter(action="token.revoke")
    assert event.team == team and event.actor_user == admin_user
    assert event.target_id == str(token.pk)
    assert event.data == {"prefix": token.prefix, "reason": "member-removed"}
    # the removal and the revocation are one step, recorded in order
    actions = list(
        AuditEvent.objects.filter(team=team).order_by("id").values_list("action", flat=True)
    )
    assert actions[-2:] == ["token.revoke", "membership.remove"]
    # the team's own token is nobody's and stays
    assert bearer(kept).get("/api/sources/").status_code == 200


def test_it_refuses_a_personal_token_whose_person_can_no_longer_act(ada, team):
    secret = token_from_page(ada, team, "ada-ci", ["sources:read"])
    ada.is_active = False  # an operator disabled the account in the Django admin
    ada.save(update_fields=["is_active"])
    response = bearer(secret).get("/api/sources/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "token-owner-gone"
    ada.is_active = True
    ada.save(update_fields=["is_active"])
    assert bearer(secret).get("/api/sources/").status_code == 200
    # A membership gone without our service (data from before this rule) is refused too.
    Membership.objects.filter(user=ada, team=team).delete()
    response = bearer(secret).get("/api/sources/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "token-owner-gone"
    assert "no longer a member" in response.json()["error"]["message"]


def test_it_narrows_a_demoted_reviewers_token_to_their_new_role(ada, admin_user, team, repository):
    secret = token_from_page(ada, team, "ada-review", ["reviews:read", "reviews:write"])
    membership = Membership.objects.get(user=ada, team=team)
    response = session(admin_user).post(
        f"/t/{team.slug}/members/{membership.pk}/", {"role": Role.VIEWER}
    )
    assert response.status_code == 302
    assert AuditEvent.objects.filter(action="membership.set", data__role="viewer").exists()

    token = bearer(secret)
    refused = approve(token, proposal(repository, ATTEMPT))
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["code"] == "insufficient-scope"
    assert "'reviews:write'" in error["message"]
    assert Decision.objects.count() == 0
    # what a viewer may still do, the token still does; it is not revoked
    assert token.get("/api/reviews/proposals/").status_code == 200
    me = token.get("/api/me/").json()["token"]
    assert me["kind"] == "personal"
    assert me["scopes"] == ["reviews:read", "reviews:write"]
    assert me["active_scopes"] == ["reviews:read"]
    assert ApiToken.objects.get(name="ada-review").revoked_at is None


def test_it_commits_a_team_tokens_approval_as_the_bot(
    team, repository, remote, settings, django_capture_on_commit_callbacks
):
    settings.REVIEW_BOT_IDENTITY = "Review Bot <review-bot@example.org>"
    secret = team_token(team, "ci", "reviews:read,reviews:write")
    assert ApiToken.objects.get(name="ci").kind == TokenKind.TEAM
    with django_capture_on_commit_callbacks(execute=True):
        response = approve(bearer(secret), proposal(repository, ATTEMPT))
    assert response.status_code == 202, response.content
    decision = Decision.objects.get()
    assert decision.state == PushState.PUSHED, decision.state_detail
    assert remote.log("%an|%ae")[0] == "Review Bot|review-bot@example.org"


def test_it_commits_a_personal_tokens_approval_as_its_person(
    ada, team, repository, remote, django_capture_on_commit_callbacks
):
    secret = token_from_page(ada, team, "ada-review", ["reviews:write"])
    with django_capture_on_commit_callbacks(execute=True):
        assert approve(bearer(secret), proposal(repository, ATTEMPT)).status_code == 202
    assert remote.log("%an|%ae")[0] == "Ada|ada@example.org"


# --- item 6: two approvals are two people ---------------------------------------------------


def test_it_refuses_a_team_tokens_approval_where_two_people_must_approve(
    two, remote, reviewer_user, django_capture_on_commit_callbacks
):
    before = remote.log("%H")
    first, second = (team_token(two.team, n, "reviews:write") for n in ("bot-a", "bot-b"))
    memory = proposal(two, SQLITE)
    for secret in (first, second):
        refused = approve(bearer(secret), memory)
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "human-approval-required"
    assert Approval.objects.count() == 0
    # after a person's first approval, a team token can not be the second either
    assert approve(session(reviewer_user), memory).status_code == 202
    with django_capture_on_commit_callbacks(execute=True):
        refused = approve(bearer(first), memory)
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "human-approval-required"
    assert Decision.objects.count() == 0 and Approval.objects.count() == 1
    assert remote.log("%H") == before  # nothing committed


def test_it_counts_a_session_and_the_same_persons_token_as_one_reviewer(
    two, ada, reviewer_user, remote, django_capture_on_commit_callbacks
):
    secret = token_from_page(ada, two.team, "ada-review", ["reviews:write"])
    memory = proposal(two, SQLITE)
    first = approve(session(ada), memory)
    assert first.status_code == 202 and Decision.objects.count() == 0
    again = approve(bearer(secret), memory)
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "already-approved"
    with django_capture_on_commit_callbacks(execute=True):
        assert approve(session(reviewer_user), memory).status_code == 202
    decision = Decision.objects.get()
    assert decision.state == PushState.PUSHED, decision.state_detail
    assert remote.log("%an")[0] == "Rita"


def test_it_does_not_count_a_first_approval_a_team_token_left_before_the_rule(
    two, reviewer_user, make_token
):
    memory = proposal(two, SQLITE)
    token = ApiToken.objects.get(prefix=make_token(two.team, ["reviews:write"]).split("_")[1])
    Approval.objects.create(  # what the old code recorded for an ownerless token
        team=two.team,
        memory=memory,
        blob_sha=memory.blob_sha,
        token=token,
        approver_key=f"token:{token.pk}",
        actor_label="token:t",
        author_name="memoryadmin",
        author_email="bot@localhost",
    )
    response = approve(session(reviewer_user), memory)
    assert response.status_code == 202
    body = response.json()  # rita's is the first approval by a person: nothing is committed
    assert (body["actor_label"], body["approvals"], body["approvals_required"]) == (
        "user:rita",
        1,
        2,
    )
    assert Decision.objects.count() == 0
