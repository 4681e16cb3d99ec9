from __future__ import annotations

import re

import pytest
from django.test import Client

from memoryadmin.audit import Actor
from memoryadmin.models import ApiToken, Role
from memoryadmin.services import membership_set


def test_it_renders_the_login_page(client, db):
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<title>Log in · memoryadmin</title>" in html
    assert 'name="username"' in html and 'name="password"' in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert 'aria-label="Main"' not in html  # no navigation before login


def test_it_logs_in_and_goes_to_the_only_team(client, admin_user, team):
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})
    assert response.status_code == 302
    assert response["Location"] == "/"
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == f"/t/{team.slug}/"


def test_it_returns_to_the_page_asked_for_after_login(client, admin_user, team):
    response = client.post(
        "/accounts/login/?next=/t/alpha/tokens/",
        {"username": "alice", "password": "pw-alice", "next": "/t/alpha/tokens/"},
    )
    assert response["Location"] == "/t/alpha/tokens/"


def test_it_refuses_a_wrong_password(client, admin_user):
    response = client.post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert 'role="alert"' in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_it_logs_out_by_post_only(client, admin_user):
    client.force_login(admin_user)
    assert client.get("/accounts/logout/").status_code == 405
    response = client.post("/accounts/logout/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/"
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize("path", ["/", "/t/alpha/", "/t/alpha/tokens/", "/t/alpha/audit/"])
def test_it_sends_anonymous_visitors_to_login(client, team, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith(f"/accounts/login/?next={path}")


def test_it_lists_teams_for_a_member_of_several(client, make_user, team, other_team):
    user = make_user("multi", team=team, role=Role.VIEWER)
    membership_set(actor=Actor.system(), team=other_team, user=user, role=Role.ADMIN)
    client.force_login(user)
    html = client.get("/").content.decode()
    assert 'href="/t/alpha/"' in html and 'href="/t/beta/"' in html


def test_it_tells_a_user_without_teams_to_ask_for_one(client, make_user, db):
    client.force_login(make_user("lonely"))
    assert "not a member of any team" in client.get("/").content.decode()


def nav(html: str) -> str:
    match = re.search(r'<nav aria-label="Main">(.*?)</nav>', html, re.S)
    assert match, html
    return match.group(1)


def test_it_shows_the_full_nav_and_current_team_to_an_admin(client, admin_user, team):
    client.force_login(admin_user)
    html = client.get(f"/t/{team.slug}/tokens/").content.decode()
    links = nav(html)
    for href in ("/t/alpha/", "/t/alpha/sources/", "/t/alpha/reviews/", "/t/alpha/brain/"):
        assert f'href="{href}"' in links
    assert 'href="/t/alpha/audit/"' in links
    assert 'href="/t/alpha/tokens/" aria-current="page"' in links
    assert '<span class="team-name">Alpha</span>' in html
    assert '<span class="role">admin</span>' in html
    assert '<span class="user-name">alice</span>' in html


def test_it_hides_admin_links_from_a_viewer(client, viewer_user, team):
    client.force_login(viewer_user)
    response = client.get(f"/t/{team.slug}/")
    assert response.status_code == 200
    links = nav(response.content.decode())
    assert 'href="/t/alpha/sources/"' in links
    assert "/audit/" not in links and "/tokens/" not in links
    assert '<span class="role">viewer</span>' in response.content.decode()


def test_it_enforces_csrf_on_the_token_form(admin_user, team):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    data = {"name": "ci", "scopes": ["sources:read"]}
    assert client.post(f"/t/{team.slug}/tokens/", data).status_code == 403
    assert not ApiToken.objects.exists()

    page = client.get(f"/t/{team.slug}/tokens/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    response = client.post(f"/t/{team.slug}/tokens/", {**data, "csrfmiddlewaretoken": token})
    assert response.status_code == 200
    assert ApiToken.objects.filter(name="ci").exists()


def test_it_enforces_csrf_on_logout(admin_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    assert client.post("/accounts/logout/").status_code == 403
    assert "_auth_user_id" in client.session
