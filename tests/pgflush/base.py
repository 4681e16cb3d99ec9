"""PostgreSQL for the test suite: Django's test flush may empty the append-only audit table.

Django empties the database between transactional tests (`flush`) with one TRUNCATE of every
table, which memoryadmin/0003 refuses for the audit table. The flush runs in one transaction;
this backend starts it with `SET LOCAL memoryadmin.audit_truncate = 'allow'`, the owner's
maintenance switch, so only that statement gets through. Nothing else in the tests changes.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.postgresql import base, operations

ALLOW_AUDIT_TRUNCATE = "SET LOCAL memoryadmin.audit_truncate = 'allow';"


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(self, style: Any, tables: Any, **kwargs: Any) -> list[str]:
        statements = super().sql_flush(style, tables, **kwargs)
        return [ALLOW_AUDIT_TRUNCATE, *statements] if statements else statements


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
