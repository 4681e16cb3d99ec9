from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied

from memoryadmin.models import Role
from memoryadmin.permissions import Action, require, role_of, teams_for, user_can

V, R, M = Action.VIEW, Action.REVIEW, Action.MANAGE

MATRIX = [
    ("viewer", {V}),
    ("reviewer", {V, R}),
    ("admin", {V, R, M}),
    ("superuser", {V, R, M}),
    ("non-member", set()),
    ("member-of-other-team", set()),
    ("anonymous", set()),
]


@pytest.fixture
def who(make_user, team, other_team):  # type: ignore[no-untyped-def]
    def make(kind: str):  # type: ignore[no-untyped-def]
        if kind in Role.values:
            return make_user(f"u-{kind}", team=team, role=kind)
        if kind == "superuser":
            return make_user("root", is_superuser=True, is_staff=True)
        if kind == "non-member":
            return make_user("stranger")
        if kind == "member-of-other-team":
            return make_user("neighbour", team=other_team, role=Role.ADMIN)
        return AnonymousUser()

    return make


@pytest.mark.parametrize(("kind", "allowed"), MATRIX)
@pytest.mark.parametrize("action", list(Action))
def test_it_answers_user_can_per_role_and_action(who, team, kind, allowed, action):
    user = who(kind)
    assert user_can(user, team, action) is (action in allowed)
    if action in allowed:
        require(user, team, action)
    else:
        with pytest.raises(PermissionDenied):
            require(user, team, action)


def test_it_caches_the_role_per_user_and_team(make_user, team, django_assert_num_queries):
    user = make_user("cached", team=team, role=Role.REVIEWER)
    with django_assert_num_queries(1):
        assert role_of(user, team) == Role.REVIEWER
        assert user_can(user, team, Action.REVIEW)
        assert not user_can(user, team, Action.MANAGE)


def test_it_lists_only_the_teams_a_user_belongs_to(make_user, team, other_team):
    member = make_user("m", team=team, role=Role.VIEWER)
    root = make_user("root", is_superuser=True)
    assert list(teams_for(member)) == [team]
    assert set(teams_for(root)) == {team, other_team}
    assert list(teams_for(AnonymousUser())) == []


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        ("admin", 200),
        ("superuser", 200),
        ("reviewer", 403),
        ("viewer", 403),
        ("non-member", 404),
        ("member-of-other-team", 404),
    ],
)
def test_it_guards_team_pages_with_404_for_outsiders_and_403_for_low_roles(
    client, who, team, kind, status
):
    client.force_login(who(kind))
    assert client.get(f"/t/{team.slug}/tokens/").status_code == status


def test_it_answers_404_for_a_team_that_does_not_exist(client, admin_user):
    client.force_login(admin_user)
    assert client.get("/t/no-such-team/tokens/").status_code == 404


def test_it_sends_anonymous_visitors_of_team_pages_to_login(client, team):
    response = client.get(f"/t/{team.slug}/tokens/")
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next=/t/{team.slug}/tokens/"
