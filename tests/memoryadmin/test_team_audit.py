from __future__ import annotations

import pytest

from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Role


@pytest.fixture
def events(team, other_team):  # type: ignore[no-untyped-def]
    for index in range(60):
        audit_record(
            actor=Actor.system(),
            action="thing.done" if index % 2 else "thing.undone",
            team=team,
            summary=f"alpha event {index}",
        )
    audit_record(actor=Actor.system(), action="thing.done", team=other_team, summary="beta secret")


@pytest.mark.parametrize(
    ("role", "status"), [(Role.ADMIN, 200), (Role.REVIEWER, 403), (Role.VIEWER, 403)]
)
def test_it_shows_the_team_audit_to_admins_only(client, make_user, team, role, status):
    client.force_login(make_user("u", team=team, role=role))
    assert client.get(f"/t/{team.slug}/audit/").status_code == status


def test_it_hides_the_team_audit_from_other_teams(client, make_user, team, other_team):
    client.force_login(make_user("u", team=other_team, role=Role.ADMIN))
    assert client.get(f"/t/{team.slug}/audit/").status_code == 404


def test_it_lists_only_this_teams_events_newest_first_in_pages(
    client, admin_user, team, events, django_assert_max_num_queries
):
    client.force_login(admin_user)
    with django_assert_max_num_queries(8):  # +1: the audit filter's action choices
        response = client.get(f"/t/{team.slug}/audit/")
    html = response.content.decode()
    assert "beta secret" not in html
    assert "alpha event 59" in html
    assert html.index("alpha event 59") < html.index("alpha event 58")
    page = response.context["page"]
    # 60 events, the team's creation and alice joining: 62, 50 a page
    assert (page.paginator.count, len(page.object_list)) == (62, 50)
    second = client.get(f"/t/{team.slug}/audit/?page=2")
    assert len(second.context["page"].object_list) == 12
    assert "alpha event 0<" in second.content.decode()


def test_it_filters_the_team_audit_by_action(client, admin_user, team, events):
    client.force_login(admin_user)
    response = client.get(f"/t/{team.slug}/audit/?action=thing.undone")
    page = response.context["page"]
    assert page.paginator.count == 30
    assert {event.action for event in page.object_list} == {"thing.undone"}
    assert 'value="thing.undone"' in response.content.decode()


def test_it_shows_the_audit_nav_link_as_current(client, admin_user, team):
    client.force_login(admin_user)
    html = client.get(f"/t/{team.slug}/audit/").content.decode()
    assert 'href="/t/alpha/audit/" aria-current="page"' in html
