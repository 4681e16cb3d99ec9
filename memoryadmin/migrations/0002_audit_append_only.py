"""Make the audit table append-only below the ORM: UPDATE and DELETE fail in the database."""

from __future__ import annotations

from django.db import migrations

PG_FORWARD = """
CREATE OR REPLACE FUNCTION memoryadmin_audit_immutable() RETURNS trigger AS $$
BEGIN
  RAISE EXCEPTION 'audit events are append-only (% refused)', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER memoryadmin_auditevent_no_update BEFORE UPDATE OR DELETE ON memoryadmin_auditevent
  FOR EACH ROW EXECUTE FUNCTION memoryadmin_audit_immutable();
"""
PG_BACKWARD = """
DROP TRIGGER IF EXISTS memoryadmin_auditevent_no_update ON memoryadmin_auditevent;
DROP FUNCTION IF EXISTS memoryadmin_audit_immutable();
"""


def forward(apps, schema_editor):  # type: ignore[no-untyped-def]
    # Only PostgreSQL: SQLite (the embedded default) relies on the ORM guard, because
    # Django's test flush empties tables with DELETE and SQLite has no per-session bypass.
    # TRUNCATE is refused by 0003 (row triggers never see it).
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_FORWARD, params=None)


def backward(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_BACKWARD, params=None)


class Migration(migrations.Migration):
    dependencies = [("memoryadmin", "0001_initial")]
    operations = [migrations.RunPython(forward, backward)]
