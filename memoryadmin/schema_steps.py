"""A migration step Django's AlterField does not take safely: dropping a foreign key's own
index, or its database constraint, and nothing else.

AlterField drops every single-column index on the column when `db_index` goes off (a partial
index on `reviews_memory (team_id)` that another app made went with it), and drops and re-adds
the foreign key's constraint, validating every row of a large table again. This drops exactly
the named objects; the migration's state says the rest (`SeparateDatabaseAndState`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import migrations


@dataclass(frozen=True)
class KeyIndex:
    """The index Django made for a foreign key column (`<table>_<column>_<hash>`)."""

    table: str
    column: str
    name: str


@dataclass(frozen=True)
class KeyConstraint:
    """A foreign key's constraint in the database (PostgreSQL: SQLite keeps a table's
    references in its definition, where it stays until the table is next rebuilt)."""

    table: str
    column: str
    name: str
    target: str  # the referenced table (its `id`)


def drop_keys(
    indexes: tuple[KeyIndex, ...] = (), constraints: tuple[KeyConstraint, ...] = ()
) -> migrations.RunPython:
    """A step that drops these indexes and constraints (backwards: makes them again)."""

    def forwards(apps: Any, schema_editor: Any) -> None:
        postgresql = schema_editor.connection.vendor == "postgresql"
        for index in indexes:
            schema_editor.execute(f'DROP INDEX IF EXISTS "{index.name}"')
        for key in constraints if postgresql else ():
            schema_editor.execute(
                f'ALTER TABLE "{key.table}" DROP CONSTRAINT IF EXISTS "{key.name}"'
            )

    def backwards(apps: Any, schema_editor: Any) -> None:
        postgresql = schema_editor.connection.vendor == "postgresql"
        for index in indexes:
            schema_editor.execute(
                f'CREATE INDEX IF NOT EXISTS "{index.name}" ON "{index.table}" ("{index.column}")'
            )
        for key in constraints if postgresql else ():
            schema_editor.execute(
                f'ALTER TABLE "{key.table}" ADD CONSTRAINT "{key.name}" FOREIGN KEY '
                f'("{key.column}") REFERENCES "{key.target}" ("id") DEFERRABLE INITIALLY DEFERRED'
            )

    return migrations.RunPython(forwards, backwards)
