"""TRUNCATE cannot empty the audit log on PostgreSQL, and the documented app role cannot either.

Row triggers (0002) never fire on TRUNCATE; a statement trigger (0003) refuses it. The owner's
maintenance switch is honoured for the table's owner only, which is what lets Django's own test
flush work; docs/deployment.md's `audit-grants` block keeps the application's role from
owning, changing or truncating the table.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import AuditEvent
from memoryadmin.services import team_create

pytestmark = pytest.mark.skipif(
    os.environ.get("DATABASE_URL", "").split(":", 1)[0] not in ("postgres", "postgresql"),
    reason="the database triggers are PostgreSQL's (SQLite relies on the ORM guard)",
)

DEPLOYMENT_DOC = Path(__file__).resolve().parent.parent.parent / "docs" / "deployment.md"
SWITCH = "SET LOCAL memoryadmin.audit_truncate = 'allow'"


def _execute(*statements: str) -> None:
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


@contextmanager
def _refused(match: str) -> Iterator[None]:
    """The statements inside fail with `match`; a savepoint keeps the test's transaction usable."""
    with pytest.raises(DatabaseError, match=match), transaction.atomic():
        yield


def _event(team) -> AuditEvent:  # type: ignore[no-untyped-def]
    event = audit_record(actor=Actor.system(), action="test.event", team=team, summary="kept")
    # Run the deferred foreign key checks now: TRUNCATE refuses a table with pending ones.
    _execute("SET CONSTRAINTS ALL IMMEDIATE", "SET CONSTRAINTS ALL DEFERRED")
    return event


@pytest.fixture
def team(db):  # type: ignore[no-untyped-def]
    team = team_create(actor=Actor.system(), slug="alpha", name="Alpha")
    _execute("SET CONSTRAINTS ALL IMMEDIATE", "SET CONSTRAINTS ALL DEFERRED")
    return team


def test_it_refuses_truncate_of_the_audit_table(team):
    _event(team)
    with _refused("append-only"):
        _execute("TRUNCATE memoryadmin_auditevent")
    assert AuditEvent.objects.filter(action="test.event").exists()


def test_it_refuses_a_truncate_that_cascades_into_the_audit_table(team):
    _event(team)
    with _refused("append-only"):
        _execute("TRUNCATE memoryadmin_team CASCADE")
    assert AuditEvent.objects.filter(action="test.event").exists()


def test_it_lets_the_tables_owner_truncate_with_the_maintenance_switch(team):
    _event(team)
    with transaction.atomic():
        _execute(SWITCH, "TRUNCATE memoryadmin_auditevent")
        assert not AuditEvent.objects.exists()
        transaction.set_rollback(True)
    assert AuditEvent.objects.filter(action="test.event").exists()


@pytest.mark.django_db(transaction=True)
def test_it_does_not_carry_the_switch_past_its_transaction():
    team_create(actor=Actor.system(), slug="gamma", name="Gamma")
    with transaction.atomic():
        _execute(SWITCH)
    with pytest.raises(DatabaseError, match="append-only"):
        _execute("TRUNCATE memoryadmin_auditevent")
    assert AuditEvent.objects.filter(action="team.create").exists()


@pytest.mark.django_db(transaction=True)
def test_it_lets_djangos_test_flush_empty_the_audit_table():
    team = team_create(actor=Actor.system(), slug="gamma", name="Gamma")
    _event(team)
    call_command("flush", interactive=False, verbosity=0)
    assert not AuditEvent.objects.exists()


def _audit_grants(app_role: str) -> list[str]:
    """The `audit-grants` SQL block of docs/deployment.md, for a role named app_role."""
    text = DEPLOYMENT_DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"^```sql audit-grants\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    assert len(blocks) == 1, "docs/deployment.md must have one ```sql audit-grants block"
    statements = [s.strip() for s in blocks[0].split(";") if s.strip()]
    return [s.replace("memoryadmin_app", app_role) for s in statements]


@pytest.fixture
def app_role(team) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A role set up like the deployment doc's memoryadmin_app, inside the test's transaction.

    CREATE ROLE is transactional in PostgreSQL: the test's rollback removes the role again.
    """
    role = f"memoryadmin_app_test_{os.getpid()}"
    _execute(
        f"CREATE ROLE {role} NOLOGIN",
        f"GRANT USAGE ON SCHEMA public TO {role}",
        # What the doc's ALTER DEFAULT PRIVILEGES gives on the tables migrations created.
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}",
        *_audit_grants(role),
    )
    _execute(f"SET LOCAL ROLE {role}")
    yield role
    _execute("RESET ROLE")


def test_it_lets_the_documented_app_role_write_and_read_audit_events(team, app_role):
    event = _event(team)
    assert AuditEvent.objects.get(pk=event.pk).summary == "kept"
    # A service as a whole (a team, its membership rows and its audit event) works as the role.
    team_create(actor=Actor.system(), slug="delta", name="Delta")


def test_it_refuses_the_documented_app_role_any_change_to_the_audit_log(team, app_role):
    event = _event(team)
    for statement in (
        "UPDATE memoryadmin_auditevent SET summary = 'forged' WHERE action = 'test.event'",
        "DELETE FROM memoryadmin_auditevent WHERE action = 'test.event'",
        "TRUNCATE memoryadmin_auditevent",
        "ALTER TABLE memoryadmin_auditevent DISABLE TRIGGER ALL",
        "DROP TRIGGER memoryadmin_auditevent_no_truncate ON memoryadmin_auditevent",
    ):
        with _refused("permission denied|must be owner"):
            _execute(statement)
    with _refused("append-only|permission denied"):
        _execute(SWITCH, "TRUNCATE memoryadmin_auditevent")
    assert AuditEvent.objects.get(pk=event.pk).summary == "kept"


def test_it_refuses_the_maintenance_switch_to_a_role_that_does_not_own_the_table(team):
    """Even with TRUNCATE granted, a role that is not the owner is stopped by the trigger."""
    role = f"memoryadmin_truncater_test_{os.getpid()}"
    _event(team)
    _execute(
        f"CREATE ROLE {role} NOLOGIN",
        f"GRANT USAGE ON SCHEMA public TO {role}",
        f"GRANT SELECT, TRUNCATE ON memoryadmin_auditevent TO {role}",
        f"SET LOCAL ROLE {role}",
    )
    with _refused("append-only"):
        _execute(SWITCH, "TRUNCATE memoryadmin_auditevent")
    _execute("RESET ROLE")
    assert AuditEvent.objects.filter(action="test.event").exists()
