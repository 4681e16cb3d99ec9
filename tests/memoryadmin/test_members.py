from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent, Membership, Role, Team
from memoryadmin.services import membership_remove, membership_set


def test_it_lets_a_team_admin_add_change_and_remove_members(client, admin_user, make_user, team):
    bob = make_user("bob")
    client.force_login(admin_user)
    response = client.post("/t/alpha/members/", {"username": "bob", "role": "viewer"})
    assert response.status_code == 302
    membership = Membership.objects.get(team=team, user=bob)
    assert membership.role == Role.VIEWER

    client.post(f"/t/alpha/members/{membership.pk}/", {"role": "reviewer"})
    membership.refresh_from_db()
    assert membership.role == Role.REVIEWER

    # Removing asks first: the old one-click post leads to the confirmation page.
    asked = client.post(f"/t/alpha/members/{membership.pk}/", {"remove": "1"})
    assert asked.url == f"/t/alpha/members/{membership.pk}/remove/"
    assert Membership.objects.filter(team=team, user=bob).exists()
    page = client.get(asked.url)
    assert b"Remove bob from" in page.content
    assert b"revokes no token" in page.content
    client.post(asked.url)
    assert not Membership.objects.filter(team=team, user=bob).exists()
    actions = list(
        AuditEvent.objects.filter(team=team, data__user="bob").values_list("action", flat=True)
    )
    assert sorted(actions) == ["membership.remove", "membership.set", "membership.set"]


def test_it_reports_an_unknown_user_on_the_form(client, admin_user):
    client.force_login(admin_user)
    response = client.post("/t/alpha/members/", {"username": "nobody", "role": "viewer"})
    assert response.status_code == 400
    assert b"No user with that name." in response.content


def test_it_keeps_the_last_admin(client, admin_user, team):
    membership = Membership.objects.get(team=team, user=admin_user)
    with pytest.raises(ValidationError):
        membership_remove(actor=Actor.system(), membership=membership)
    with pytest.raises(ValidationError):
        membership_set(actor=Actor.system(), team=team, user=admin_user, role=Role.VIEWER)
    client.force_login(admin_user)
    response = client.post(f"/t/alpha/members/{membership.pk}/remove/")
    assert response.status_code == 409
    assert b"is the last admin of alpha" in response.content
    assert Membership.objects.filter(pk=membership.pk, role=Role.ADMIN).exists()


def test_it_allows_members_page_only_to_team_admins(client, reviewer_user, other_team, make_user):
    client.force_login(reviewer_user)
    assert client.get("/t/alpha/members/").status_code == 403
    assert client.get("/t/beta/members/").status_code == 404


def test_it_lets_a_superuser_create_a_team_and_become_its_admin(client, make_user):
    root = make_user("root", is_superuser=True, is_staff=True)
    client.force_login(root)
    response = client.post("/", {"slug": "gamma", "name": "Gamma"})
    assert response.status_code == 302
    team = Team.objects.get(slug="gamma")
    assert Membership.objects.get(team=team, user=root).role == Role.ADMIN
    assert AuditEvent.objects.filter(team=team, action="team.create").exists()


def test_it_refuses_team_creation_to_others(client, admin_user):
    client.force_login(admin_user)
    assert client.post("/", {"slug": "gamma", "name": "Gamma"}).status_code == 403
    assert not Team.objects.filter(slug="gamma").exists()


def test_it_keeps_the_django_admin_read_only(client, make_user, team):
    root = make_user("root", is_superuser=True, is_staff=True)
    client.force_login(root)
    assert client.get("/admin/memoryadmin/team/add/").status_code == 403
    page = client.get(f"/admin/memoryadmin/team/{team.pk}/change/")
    assert page.status_code == 200
    assert b'name="_save"' not in page.content
