"""/api/members/: list (the members page's filters), change role, remove; and the page's
confirmation step for a removal."""

from __future__ import annotations

from memoryadmin.audit import Actor
from memoryadmin.models import ApiToken, Membership, Role, Scope
from memoryadmin.tokens import token_create


def test_it_lists_filters_and_sorts_members_like_the_page(
    team, admin_user, make_user, token_client, client
):
    make_user("bob", team=team, role=Role.VIEWER)
    make_user("carla", team=team, role=Role.REVIEWER)
    api = token_client(team, [Scope.TEAM_MANAGE])
    everyone = api.get("/api/members/?sort=user").json()["results"]
    assert [m["username"] for m in everyone] == ["alice", "bob", "carla"]
    assert api.get("/api/members/?sort=-user").json()["results"][0]["username"] == "carla"
    viewers = api.get("/api/members/?role=viewer").json()["results"]
    assert [m["username"] for m in viewers] == ["bob"]
    found = api.get("/api/members/?q=CARL").json()["results"]
    assert [m["username"] for m in found] == ["carla"]
    bad = api.get("/api/members/?role=owner")
    assert bad.status_code == 400 and "role" in bad.json()["error"]["details"]
    client.force_login(admin_user)
    page = client.get(f"/t/{team.slug}/members/?role=viewer")
    assert [m.user.username for m in page.context["members"]] == ["bob"]
    assert client.get(f"/t/{team.slug}/members/?role=owner").status_code == 400


def test_it_changes_a_role_and_removes_a_member_through_the_api(team, make_user, token_client):
    bob = make_user("bob", team=team, role=Role.VIEWER)
    make_user("alice", team=team, role=Role.ADMIN)
    membership = Membership.objects.get(user=bob)
    token_create(actor=Actor(user=bob), team=team, name="bob-ci", scopes=["sources:read"])
    api = token_client(team, [Scope.TEAM_MANAGE])
    changed = api.patch(f"/api/members/{membership.pk}/", {"role": "reviewer"}, format="json")
    assert changed.status_code == 200 and changed.json()["role"] == "reviewer"
    bad = api.patch(f"/api/members/{membership.pk}/", {"role": "owner"}, format="json")
    assert bad.status_code == 400
    assert api.delete(f"/api/members/{membership.pk}/").status_code == 204
    assert not Membership.objects.filter(user=bob).exists()
    assert ApiToken.objects.get(name="bob-ci").revoked_at is not None


def test_it_refuses_removing_the_last_admin_through_the_api(team, admin_user, token_client):
    api = token_client(team, [Scope.TEAM_MANAGE])
    membership = Membership.objects.get(user=admin_user)
    refused = api.delete(f"/api/members/{membership.pk}/")
    assert refused.status_code == 400
    assert "last admin" in refused.json()["error"]["message"]


def test_it_keeps_members_of_another_team_out_of_reach(team, other_team, make_user, token_client):
    outsider = make_user("oscar", team=other_team, role=Role.VIEWER)
    membership = Membership.objects.get(user=outsider)
    api = token_client(team, [Scope.TEAM_MANAGE])
    assert api.get(f"/api/members/{membership.pk}/").status_code == 404
    assert api.delete(f"/api/members/{membership.pk}/").status_code == 404
    assert "oscar" not in api.get("/api/members/").content.decode()


def test_it_says_what_removing_a_member_does_before_doing_it(client, admin_user, make_user, team):
    bob = make_user("bob", team=team, role=Role.REVIEWER)
    token_create(actor=Actor(user=bob), team=team, name="bob-agent", scopes=["context:read"])
    membership = Membership.objects.get(user=bob)
    client.force_login(admin_user)
    members = client.get(f"/t/{team.slug}/members/").content.decode()
    assert f"/t/{team.slug}/members/{membership.pk}/remove/" in members
    page = client.get(f"/t/{team.slug}/members/{membership.pk}/remove/")
    html = page.content.decode()
    assert "Remove bob from Alpha?" in html
    assert "revokes their 1 personal API token on this team" in html and "bob-agent" in html
    assert Membership.objects.filter(user=bob).exists()  # nothing happened yet
    assert client.post(f"/t/{team.slug}/members/{membership.pk}/remove/").status_code == 302
    assert not Membership.objects.filter(user=bob).exists()
