"""Error pages inside the layout with the reason and a way back; the API keeps JSON bodies."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings

BOOM = override_settings(ROOT_URLCONF="tests.memoryadmin.urls_boom")


def _html(response) -> str:  # type: ignore[no-untyped-def]
    assert response["Content-Type"].startswith("text/html")
    return response.content.decode()


def test_a_role_too_low_says_which_role_is_needed_and_links_back(client, viewer_user, team):
    client.force_login(viewer_user)
    response = client.get(f"/t/{team.slug}/tokens/")
    assert response.status_code == 403
    html = _html(response)
    assert "<title>Not allowed · memoryadmin</title>" in html
    assert f"You need the admin role on {team.name} to do this; your role is viewer." in html
    assert f'href="/t/{team.slug}/"' in html and f"Back to the {team.name} dashboard" in html
    assert 'aria-label="Main"' in html  # inside the layout, with the team's navigation


def test_a_reviewer_is_told_admin_and_a_viewer_deciding_is_told_reviewer(
    client, reviewer_user, viewer_user, team
):
    from memoryadmin.permissions import Action, role_needed

    assert role_needed(Action.REVIEW) == "reviewer"
    assert role_needed(Action.MANAGE) == "admin"
    client.force_login(reviewer_user)
    html = _html(client.get(f"/t/{team.slug}/members/"))
    assert "You need the admin role on Alpha to do this; your role is reviewer." in html


def test_an_unknown_page_is_404_inside_the_layout(client, admin_user, team):
    client.force_login(admin_user)
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    html = _html(response)
    assert "Page not found" in html and 'href="/"' in html and "Go to your teams" in html
    assert 'aria-label="Main"' in html


def test_another_teams_page_is_the_same_404_as_a_missing_one(client, admin_user, other_team):
    client.force_login(admin_user)
    response = client.get(f"/t/{other_team.slug}/")
    assert response.status_code == 404
    assert other_team.name not in _html(response)  # says nothing about the other team


@pytest.mark.parametrize("path", ["/api/no-such-thing/", "/v1/no-such-thing", "/api/boom/"])
@BOOM
def test_the_api_keeps_json_error_bodies(path, admin_user, db):
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)
    response = client.get(path)
    assert response.status_code in (404, 500)
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == {404: "not-found", 500: "error"}[response.status_code]
    assert error["message"] and "a bug" not in error["message"]


@BOOM
def test_a_server_error_page_reads_no_database_and_shows_no_traceback(
    admin_user, team, django_assert_num_queries
):
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)
    from django.test import RequestFactory

    from memoryadmin import error_views

    request = RequestFactory().get("/boom/")
    request.user = admin_user
    with django_assert_num_queries(0):  # no team list, no role: the database may be what failed
        response = error_views.server_error(request)
    html = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong" in html and 'href="/"' in html
    assert 'aria-label="Main"' not in html
    through_the_stack = client.get("/boom/")
    assert through_the_stack.status_code == 500
    assert "Something went wrong" in _html(through_the_stack)
    assert "RuntimeError" not in through_the_stack.content.decode()


@BOOM
def test_a_bad_request_and_a_rate_limit_have_their_pages(admin_user, db):
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)
    response = client.get("/suspicious/")
    assert response.status_code == 400
    assert "Bad request" in _html(response)
    response = client.get("/limited/")
    assert response.status_code == 429
    assert "Too many requests" in _html(response) and "Wait a minute" in _html(response)


def test_a_form_sent_without_its_csrf_token_is_explained(admin_user, team):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    response = client.post(f"/t/{team.slug}/tokens/", {"name": "x"})
    assert response.status_code == 403
    assert "This form expired" in _html(response)


def test_the_team_switch_works_as_a_plain_form(client, admin_user, team, other_team):
    from memoryadmin.audit import Actor
    from memoryadmin.models import Role
    from memoryadmin.services import membership_set

    membership_set(actor=Actor.system(), team=other_team, user=admin_user, role=Role.VIEWER)
    client.force_login(admin_user)
    html = client.get(f"/t/{team.slug}/").content.decode()
    assert 'name="team"' in html and ">Go</button>" in html
    assert f'<option value="{team.slug}" selected>' in html
    response = client.get("/", {"team": other_team.slug})
    assert response.status_code == 302 and response["Location"] == f"/t/{other_team.slug}/"


def test_the_team_switch_refuses_a_team_one_is_not_in(client, admin_user, team, db):
    from memoryadmin.audit import Actor
    from memoryadmin.services import team_create

    team_create(actor=Actor.system(), slug="gamma", name="Gamma")
    client.force_login(admin_user)
    response = client.get("/", {"team": "gamma"}, follow=True)
    assert "You are not a member of that team." in response.content.decode()


def test_a_buttons_address_opened_as_a_page_says_so_inside_the_layout(client, admin_user, team):
    client.force_login(admin_user)
    response = client.get("/accounts/logout/")  # POST only: a link to it must not be blank
    assert response.status_code == 405
    assert "POST" in response["Allow"] and "GET" not in response["Allow"]
    html = _html(response)
    assert "<title>Not a page to open · memoryadmin</title>" in html
    assert "it takes a form sent with POST" in html
    assert 'aria-label="Main"' in html


def test_a_team_buttons_address_links_back_to_that_teams_dashboard(client, admin_user, team):
    client.force_login(admin_user)
    response = client.get(f"/t/{team.slug}/reviews/batch/")
    assert response.status_code == 405 and "POST" in response["Allow"]
    html = _html(response)
    assert f"Back to the {team.name} dashboard" in html and f'href="/t/{team.slug}/"' in html
    # The team's navigation, as on its other pages (the view that looks it up never ran).
    assert f'href="/t/{team.slug}/reviews/"' in html and f'href="/t/{team.slug}/brain/"' in html


def test_a_refused_method_under_a_team_one_is_not_in_says_nothing_of_it(client, db, team):
    from django.contrib.auth import get_user_model

    outsider = get_user_model().objects.create_user("outsider", password="pw")
    client.force_login(outsider)
    response = client.get(f"/t/{team.slug}/reviews/batch/")
    assert response.status_code == 405
    html = _html(response)
    assert team.name not in html and f'href="/t/{team.slug}/reviews/"' not in html


def test_a_form_sent_to_a_page_that_only_shows_itself_names_the_method(client, admin_user, team):
    client.force_login(admin_user)
    response = client.post(f"/t/{team.slug}/reviews/decisions/1/")
    assert response.status_code == 405 and response["Allow"] == "GET"
    assert "does not take POST; it answers GET. Open it as a page instead." in _html(response)


def test_the_api_keeps_its_json_405(client, admin_user, team):
    client.force_login(admin_user)
    response = client.get("/api/sources/test/")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method-not-allowed"
