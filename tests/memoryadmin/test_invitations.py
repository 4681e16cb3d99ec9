"""Invitations: invite by e-mail and role, accept through the link once, expire, revoke."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.utils import timezone

from memoryadmin.audit import Actor
from memoryadmin.invitations import invitation_create
from memoryadmin.models import AuditEvent, Invitation, Membership, Role, Scope, token_hash

PASSWORD = "a long pass phrase 1"
LINK = re.compile(r"http://testserver/invite/(inv_[\w-]+)/")


def _invite(client, team, email="newcomer@example.org", role="reviewer"):  # type: ignore[no-untyped-def]
    response = client.post(f"/t/{team.slug}/invitations/", {"email": email, "role": role})
    assert response.status_code == 200, response.content
    return response


@pytest.fixture
def invited(client, admin_user, team, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    client.force_login(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = _invite(client, team)
    client.logout()
    (secret,) = set(LINK.findall(response.content.decode()))
    return secret


def test_it_shows_the_link_once_mails_it_and_stores_only_its_hash(
    client, admin_user, team, django_capture_on_commit_callbacks
):
    client.force_login(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = _invite(client, team, email="Newcomer@Example.org")
    assert response["Cache-Control"] == "no-store"
    (secret,) = set(LINK.findall(response.content.decode()))
    (message,) = mail.outbox
    assert message.to == ["newcomer@example.org"]
    assert f"http://testserver/invite/{secret}/" in message.body
    assert "as reviewer" in message.body
    invitation = Invitation.objects.get()
    assert invitation.secret_hash == token_hash(secret)
    assert secret not in str(list(Invitation.objects.values()))
    assert invitation.state == "pending"
    again = client.get(f"/t/{team.slug}/invitations/").content.decode()
    assert secret not in again and "newcomer@example.org" in again
    event = AuditEvent.objects.get(action="invitation.create")
    assert secret not in str(event.data) and event.data["role"] == "reviewer"


def test_it_joins_the_team_with_the_role_through_the_link_logged_out(client, team, invited):
    page = client.get(f"/invite/{invited}/")
    assert page.status_code == 200
    assert page["Referrer-Policy"] == "same-origin"
    assert "newcomer@example.org" in page.content.decode()
    response = client.post(
        f"/invite/{invited}/",
        {"username": "nina", "password": PASSWORD, "password_again": PASSWORD},
    )
    assert response.status_code == 302 and response.url == f"/t/{team.slug}/"
    nina = get_user_model().objects.get(username="nina")
    assert nina.email == "newcomer@example.org" and nina.check_password(PASSWORD)
    assert Membership.objects.get(team=team, user=nina).role == Role.REVIEWER
    assert client.get(f"/t/{team.slug}/").status_code == 200  # signed in
    actions = set(AuditEvent.objects.filter(team=team).values_list("action", flat=True))
    assert {"invitation.accept", "user.create", "membership.set"} <= actions
    assert Invitation.objects.get().state == "accepted"


def test_it_refuses_a_reused_link(client, team, invited):
    body = {"username": "nina", "password": PASSWORD, "password_again": PASSWORD}
    assert client.post(f"/invite/{invited}/", body).status_code == 302
    client.logout()
    again = client.post(f"/invite/{invited}/", {**body, "username": "nina2"})
    assert again.status_code == 410
    assert "already used" in again.content.decode()
    assert not get_user_model().objects.filter(username="nina2").exists()


def test_it_refuses_an_expired_link(client, team, invited):
    Invitation.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    page = client.get(f"/invite/{invited}/")
    assert page.status_code == 410 and "expired" in page.content.decode()
    assert Invitation.objects.get().state == "expired"


def test_it_refuses_a_revoked_link_and_an_unknown_one(client, admin_user, team, invited):
    client.force_login(admin_user)
    invitation = Invitation.objects.get()
    assert client.post(f"/t/{team.slug}/invitations/{invitation.pk}/revoke/").status_code == 302
    assert Invitation.objects.get().state == "revoked"
    assert AuditEvent.objects.filter(action="invitation.revoke").count() == 1
    client.logout()
    assert "was revoked" in client.get(f"/invite/{invited}/").content.decode()
    assert client.get("/invite/inv_not-a-real-one/").status_code == 410


def test_it_never_lets_another_team_see_or_revoke_an_invitation(
    client, make_user, team, other_team, invited
):
    beta_admin = make_user("bert", team=other_team, role=Role.ADMIN)
    client.force_login(beta_admin)
    invitation = Invitation.objects.get()
    assert client.post(f"/t/beta/invitations/{invitation.pk}/revoke/").status_code == 404
    assert client.post(f"/t/alpha/invitations/{invitation.pk}/revoke/").status_code == 404
    assert "newcomer@example.org" not in client.get("/t/beta/invitations/").content.decode()
    assert Invitation.objects.get().state == "pending"


def test_it_joins_a_signed_in_person_to_the_inviting_team_only(
    client, make_user, team, other_team, invited
):
    outsider = make_user("oscar", team=other_team, role=Role.VIEWER)
    client.force_login(outsider)
    assert "Join as oscar" in client.get(f"/invite/{invited}/").content.decode()
    assert client.post(f"/invite/{invited}/").status_code == 302
    assert Membership.objects.get(team=team, user=outsider).role == Role.REVIEWER
    assert Membership.objects.get(team=other_team, user=outsider).role == Role.VIEWER


def test_it_refuses_a_second_pending_invitation_and_a_member(client, admin_user, team, invited):
    client.force_login(admin_user)
    twice = client.post(
        f"/t/{team.slug}/invitations/", {"email": "newcomer@example.org", "role": "viewer"}
    )
    assert twice.status_code == 400 and "already has a pending invitation" in twice.content.decode()
    member = client.post(
        f"/t/{team.slug}/invitations/", {"email": "alice@example.org", "role": "viewer"}
    )
    assert member.status_code == 400 and "already a member" in member.content.decode()
    assert Invitation.objects.count() == 1


def test_it_checks_the_new_account_like_the_password_rules_do(client, team, invited, make_user):
    make_user("taken")
    response = client.post(
        f"/invite/{invited}/", {"username": "taken", "password": "x", "password_again": "y"}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "The two passwords differ." in html
    assert Invitation.objects.get().state == "pending"


def test_it_refuses_invitations_to_a_non_admin(team, reviewer_user):
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        invitation_create(
            actor=Actor(user=reviewer_user),
            team=team,
            email="x@example.org",
            role="viewer",
            link=str,
        )


def test_it_runs_the_lifecycle_through_the_api(
    team, other_team, token_client, django_capture_on_commit_callbacks
):
    api = token_client(team, [Scope.TEAM_MANAGE])
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post(
            "/api/invitations/", {"email": "api@example.org", "role": "viewer"}, format="json"
        )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["link"].startswith("http://testserver/invite/inv_") and body["state"] == "pending"
    assert len(mail.outbox) == 1
    listed = api.get("/api/invitations/?state=pending").json()
    assert [i["email"] for i in listed["results"]] == ["api@example.org"]
    assert "link" not in listed["results"][0]
    bad = api.get("/api/invitations/?state=nonsense")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid-filter"
    assert api.delete(f"/api/invitations/{body['id']}/").status_code == 204
    again = api.delete(f"/api/invitations/{body['id']}/")
    assert again.status_code == 409 and again.json()["error"]["code"] == "invitation-revoked"
    beta = token_client(other_team, [Scope.TEAM_MANAGE])
    assert beta.get(f"/api/invitations/{body['id']}/").status_code == 404


def test_it_needs_the_team_manage_scope(team, token_client):
    api = token_client(team, [Scope.SOURCES_READ])
    refused = api.get("/api/invitations/")
    assert refused.status_code == 403
