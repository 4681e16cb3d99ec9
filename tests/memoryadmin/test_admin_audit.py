from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta

import pytest
from django.http import StreamingHttpResponse
from django.utils import timezone

from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import AuditEvent

LIST = "/admin/memoryadmin/auditevent/"
EXPORT = "/admin/memoryadmin/auditevent/export.csv"


@pytest.fixture
def superuser_client(client, make_user):  # type: ignore[no-untyped-def]
    client.force_login(make_user("root", is_superuser=True, is_staff=True))
    return client


@pytest.fixture
def events(team, other_team):  # type: ignore[no-untyped-def]
    """Events across two teams, three actions and two years (beside the team.create ones)."""
    made = []
    for index in range(12):
        made.append(
            AuditEvent.objects.create(
                team=team if index % 2 == 0 else other_team,
                actor_label="user:alice" if index % 3 == 0 else "system",
                action=("token.create", "token.revoke", "source.refresh")[index % 3],
                summary=f"event {index} {'needle' if index in (2, 3, 8) else 'hay'}",
                created_at=timezone.make_aware(datetime(2025 if index < 6 else 2026, 3, 1))
                + timedelta(hours=index),
                data={"i": index},
            )
        )
    return made


def export_rows(response) -> list[list[str]]:  # type: ignore[no-untyped-def]
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert "attachment" in response["Content-Disposition"]
    text = b"".join(response.streaming_content).decode("utf-8")
    return list(csv.reader(io.StringIO(text)))


def listed_ids(response) -> set[int]:  # type: ignore[no-untyped-def]
    assert response.status_code == 200
    return {event.pk for event in response.context["cl"].queryset}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", lambda e: True),
        ("team__id__exact={alpha}", lambda e: e.team.slug == "alpha"),
        ("action=token.revoke", lambda e: e.action == "token.revoke"),
        ("created_at__year=2026", lambda e: e.created_at.year == 2026),
        ("q=needle", lambda e: "needle" in e.summary),
        (
            "q=needle&team__id__exact={beta}",
            lambda e: "needle" in e.summary and e.team.slug == "beta",
        ),
        (
            "created_at__gte=2026-01-01T00:00:00%2B00:00&created_at__lt=2027-01-01T00:00:00%2B00:00"
            "&action=token.create",
            lambda e: e.created_at.year == 2026 and e.action == "token.create",
        ),
    ],
)
def test_it_filters_and_exports_exactly_the_filtered_rows(
    superuser_client, events, team, other_team, query, expected
):
    query = query.format(alpha=team.pk, beta=other_team.pk)
    wanted = {e.pk for e in AuditEvent.objects.select_related("team") if expected(e)}
    assert wanted
    assert listed_ids(superuser_client.get(f"{LIST}?{query}")) == wanted

    rows = export_rows(superuser_client.get(f"{EXPORT}?{query}"))
    assert rows[0] == [
        "time",
        "team",
        "actor",
        "action",
        "target_type",
        "target_id",
        "summary",
        "ip_address",
        "request_id",
        "data",
    ]
    by_summary = {e.summary: e for e in AuditEvent.objects.filter(pk__in=wanted)}
    assert sorted(row[6] for row in rows[1:]) == sorted(by_summary)
    for row in rows[1:]:
        event = by_summary[row[6]]
        assert row[0] == event.created_at.isoformat()
        assert row[1] == (event.team.slug if event.team else "")
        assert row[3] == event.action


def test_it_links_the_export_with_the_current_filters(superuser_client, events, team):
    response = superuser_client.get(f"{LIST}?action=token.create&q=event")
    html = response.content.decode()
    assert f'href="{EXPORT}?action=token.create&amp;q=event"' in html


def test_it_shows_the_list_in_a_bounded_number_of_queries(
    superuser_client, team, django_assert_max_num_queries
):
    for index in range(60):
        audit_record(actor=Actor.system(), action="bulk.thing", team=team, summary=f"n{index}")
    with django_assert_max_num_queries(10):
        response = superuser_client.get(LIST)
    assert response.status_code == 200
    assert response.context["cl"].result_count == 61


def test_it_is_read_only_in_the_admin(superuser_client, events):
    event = events[0]
    html = superuser_client.get(LIST).content.decode()
    assert "/admin/memoryadmin/auditevent/add/" not in html
    assert "delete_selected" not in html
    assert superuser_client.get(f"{LIST}add/").status_code == 403
    change = superuser_client.get(f"{LIST}{event.pk}/change/")
    assert change.status_code == 200
    assert 'name="_save"' not in change.content.decode()
    post = superuser_client.post(f"{LIST}{event.pk}/change/", {"summary": "rewritten"})
    assert post.status_code == 403
    assert superuser_client.get(f"{LIST}{event.pk}/delete/").status_code == 403
    assert superuser_client.post(f"{LIST}{event.pk}/delete/", {"post": "yes"}).status_code == 403
    assert AuditEvent.objects.get(pk=event.pk).summary == event.summary


def test_it_refuses_the_export_to_staff_without_the_view_permission(client, make_user, events):
    client.force_login(make_user("staffer", is_staff=True))
    assert client.get(LIST).status_code == 403
    assert client.get(EXPORT).status_code == 403


def test_it_allows_the_export_to_staff_with_the_view_permission(client, make_user, events):
    from django.contrib.auth.models import Permission

    staffer = make_user("auditor", is_staff=True)
    staffer.user_permissions.add(Permission.objects.get(codename="view_auditevent"))
    client.force_login(staffer)
    assert client.get(LIST).status_code == 200
    rows = export_rows(client.get(EXPORT))
    assert len(rows) == 1 + AuditEvent.objects.count()


def test_it_sends_anonymous_export_requests_to_the_admin_login(client, events):
    response = client.get(EXPORT)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_it_answers_400_to_an_export_with_bad_filters(superuser_client, events):
    response = superuser_client.get(f"{EXPORT}?created_at__year=not-a-year")
    assert response.status_code == 400


def test_it_defuses_spreadsheet_formulas_in_the_export(superuser_client, team):
    audit_record(
        actor=Actor.system(), action="x.formula", team=team, summary='=HYPERLINK("http://x")'
    )
    response = superuser_client.get(
        "/admin/memoryadmin/auditevent/export.csv?action__exact=x.formula"
    )
    rows = export_rows(response)
    assert rows[1][6] == '\'=HYPERLINK("http://x")'
