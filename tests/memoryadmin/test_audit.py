from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, models, transaction

from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import AuditEvent, AuditImmutableError


@pytest.fixture
def event(team) -> AuditEvent:  # type: ignore[no-untyped-def]
    return audit_record(
        actor=Actor.system(), action="test.thing", team=team, summary="x", data={"n": 1}
    )


def test_it_records_the_actor_target_and_request_context(admin_user, team):
    from memoryadmin.audit import current_ip, current_request_id

    id_token = current_request_id.set("req-1")
    ip_token = current_ip.set("203.0.113.9")
    try:
        event = audit_record(
            actor=Actor(user=admin_user),
            action="team.rename",
            team=team,
            target=team,
            summary="y" * 600,
            data={"from": "a"},
        )
    finally:
        current_request_id.reset(id_token)
        current_ip.reset(ip_token)
    event.refresh_from_db()
    assert (event.actor_user, event.actor_label) == (admin_user, "user:alice")
    assert (event.target_type, event.target_id) == ("memoryadmin.team", str(team.pk))
    assert (event.request_id, event.ip_address) == ("req-1", "203.0.113.9")
    assert len(event.summary) == 500


def test_it_stamps_web_requests_with_their_request_id(client, admin_user, team):
    client.force_login(admin_user)
    response = client.post(
        f"/t/{team.slug}/tokens/", {"name": "x", "scopes": ["sources:read"]}, REMOTE_ADDR="::1"
    )
    event = AuditEvent.objects.get(action="token.create")
    assert event.request_id == response["X-Request-Id"]
    assert event.ip_address == "::1"


def test_it_refuses_to_save_an_existing_event(event):
    event.summary = "rewritten"
    with pytest.raises(AuditImmutableError):
        event.save()
    with pytest.raises(AuditImmutableError):
        event.save(update_fields=["summary"])
    assert AuditEvent.objects.get(pk=event.pk).summary == "x"


def test_it_refuses_to_delete_an_event(event):
    with pytest.raises(AuditImmutableError):
        event.delete()
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_it_refuses_queryset_update_and_delete(event):
    with pytest.raises(AuditImmutableError):
        AuditEvent.objects.filter(pk=event.pk).update(summary="gone")
    with pytest.raises(AuditImmutableError):
        AuditEvent.objects.all().delete()
    with pytest.raises(AuditImmutableError):
        AuditEvent.objects.update(summary="gone")
    assert AuditEvent.objects.get(pk=event.pk).summary == "x"


def test_it_refuses_bulk_update(event):
    event.summary = "gone"
    with pytest.raises(AuditImmutableError), transaction.atomic():
        AuditEvent.objects.bulk_update([event], ["summary"])
    assert AuditEvent.objects.get(pk=event.pk).summary == "x"


@pytest.mark.parametrize("field", ["team", "actor_user", "actor_token"])
def test_it_protects_events_from_cascading_deletes(field):
    # Deleting a team, user or token that has events must fail rather than erase history.
    assert AuditEvent._meta.get_field(field).remote_field.on_delete is models.PROTECT


@pytest.mark.postgres
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE memoryadmin_auditevent SET summary = 'rewritten'",
        "DELETE FROM memoryadmin_auditevent",
    ],
)
def test_it_refuses_raw_sql_changes_in_postgresql(event, sql):
    if connection.vendor != "postgresql":
        pytest.skip(
            "the database trigger exists only on PostgreSQL; on SQLite the ORM guard is the "
            "only protection (Django's test flush needs DELETE there)"
        )
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql)
    assert AuditEvent.objects.get(pk=event.pk).summary == "x"
