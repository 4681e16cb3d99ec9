"""TRUNCATE of the audit table fails too: row triggers (0002) never see a TRUNCATE.

A statement-level trigger refuses it, directly or through a CASCADE from a table the audit log
references. The one way through is for maintenance by the table's owner: in a transaction,
`SET LOCAL memoryadmin.audit_truncate = 'allow'` (Django's test flush does this, see
tests/pgflush). The application's own role must not own the table (docs/deployment.md), so it
can neither use that setting nor disable the trigger.
"""

from __future__ import annotations

from django.db import migrations

PG_FORWARD = """
CREATE OR REPLACE FUNCTION memoryadmin_audit_no_truncate() RETURNS trigger AS $$
BEGIN
  IF current_setting('memoryadmin.audit_truncate', true) = 'allow' AND pg_has_role(
    current_user, (SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'MEMBER'
  ) THEN
    RETURN NULL;
  END IF;
  RAISE EXCEPTION 'audit events are append-only (TRUNCATE refused)'
    USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER memoryadmin_auditevent_no_truncate BEFORE TRUNCATE ON memoryadmin_auditevent
  FOR EACH STATEMENT EXECUTE FUNCTION memoryadmin_audit_no_truncate();
"""
PG_BACKWARD = """
DROP TRIGGER IF EXISTS memoryadmin_auditevent_no_truncate ON memoryadmin_auditevent;
DROP FUNCTION IF EXISTS memoryadmin_audit_no_truncate();
"""


def forward(apps, schema_editor):  # type: ignore[no-untyped-def]
    # SQLite has no TRUNCATE (Django's flush deletes rows there, see 0002).
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_FORWARD, params=None)


def backward(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_BACKWARD, params=None)


class Migration(migrations.Migration):
    dependencies = [("memoryadmin", "0003_apitoken_kind")]
    operations = [migrations.RunPython(forward, backward)]
