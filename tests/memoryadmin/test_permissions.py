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


def _token(team, scopes, *, by=None):  # type: ignore[no-untyped-def]
    from memoryadmin.audit import Actor
    from memoryadmin.tokens import token_create

    token, _ = token_create(
        actor=Actor(user=by) if by else Actor.system(), team=team, name="t", scopes=scopes
    )
    return token


@pytest.mark.parametrize(("kind", "allowed"), MATRIX)
def test_it_lets_a_user_act_with_a_scope_when_the_role_the_scope_maps_to_allows_it(
    who, team, kind, allowed
):
    from memoryadmin.audit import Actor
    from memoryadmin.models import Scope
    from memoryadmin.permissions import actor_require

    user = who(kind)
    actor = Actor(user=user) if user.is_authenticated else Actor.system()
    if R in allowed or actor.is_system:  # the system acts on every team
        actor_require(actor, team, Scope.REVIEWS_WRITE)
    else:
        with pytest.raises(PermissionDenied, match="does not allow reviewing"):
            actor_require(actor, team, Scope.REVIEWS_WRITE)


def test_it_lets_a_token_act_only_with_its_scope_on_its_own_team(make_user, team, other_team):
    from memoryadmin.audit import Actor
    from memoryadmin.models import Scope
    from memoryadmin.permissions import actor_require

    writer = _token(team, [Scope.REVIEWS_WRITE])
    reader = _token(team, [Scope.REVIEWS_READ])
    actor_require(Actor(token=writer), team, Scope.REVIEWS_WRITE)
    for token, where in ((reader, team), (writer, other_team)):
        with pytest.raises(PermissionDenied, match="may not decide proposals"):
            actor_require(Actor(token=token), where, Scope.REVIEWS_WRITE)
    # A personal token: never beyond its creator's current role.
    viewer = make_user("vic", team=team, role=Role.VIEWER)
    with pytest.raises(PermissionDenied):
        actor_require(
            Actor(token=_token(team, [Scope.REVIEWS_WRITE], by=viewer)), team, "reviews:write"
        )


def test_it_keeps_an_action_no_scope_grants_for_signed_in_people(make_user, team):
    from memoryadmin.audit import Actor
    from memoryadmin.models import Scope
    from memoryadmin.permissions import actor_require

    actor_require(Actor(user=make_user("ada", team=team, role=Role.ADMIN)), team, M)
    refused = [
        Actor(user=make_user("rita", team=team, role=Role.REVIEWER)),
        Actor(token=_token(team, list(Scope.values))),
        Actor.system(),
    ]
    for actor in refused:
        with pytest.raises(PermissionDenied):
            actor_require(actor, team, M)


def test_it_names_the_person_behind_a_user_or_a_personal_token_and_nobody_behind_a_team_token(
    make_user, team
):
    from memoryadmin.audit import Actor
    from memoryadmin.models import Scope

    rita = make_user("rita", team=team, role=Role.REVIEWER)
    personal = Actor(token=_token(team, [Scope.REVIEWS_WRITE], by=rita))
    for actor in (Actor(user=rita), personal):
        assert actor.person == rita and actor.approver_key == f"user:{rita.pk}"
    for actor in (Actor(token=_token(team, [Scope.REVIEWS_WRITE])), Actor.system()):
        assert actor.person is None and actor.approver_key is None
