"""The pgvector column, index and trigger (migration bundles/0008; after a late install of the
extension, `manage.py enable_pgvector`: bundles.embeddings.lifecycle.pgvector_enable).

Plain SQL on a connection, no model import: a migration runs it.
"""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError, transaction

VECTOR_DIM = 384  # bundles.embeddings.model.MODEL_DIM (the column's type fixes it)

INSTALL = [
    f"ALTER TABLE bundles_chunk ADD COLUMN IF NOT EXISTS embedding_vector vector({VECTOR_DIM})",
    "CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw ON bundles_chunk "
    "USING hnsw (embedding_vector vector_cosine_ops)",
    # An `embedding` rewritten without its vector (an import's bytes) loses the stale vector;
    # the embedding run fills it again from the bytes.
    "CREATE OR REPLACE FUNCTION bundles_chunk_vector_stale() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ BEGIN "
    "IF NEW.embedding IS DISTINCT FROM OLD.embedding "
    "AND NEW.embedding_vector IS NOT DISTINCT FROM OLD.embedding_vector THEN "
    "NEW.embedding_vector := NULL; END IF; RETURN NEW; END $$",
    "DROP TRIGGER IF EXISTS bundles_chunk_vector_stale ON bundles_chunk",
    "CREATE TRIGGER bundles_chunk_vector_stale BEFORE UPDATE OF embedding ON bundles_chunk "
    "FOR EACH ROW EXECUTE FUNCTION bundles_chunk_vector_stale()",
]
UNINSTALL = [
    "DROP TRIGGER IF EXISTS bundles_chunk_vector_stale ON bundles_chunk",
    "DROP FUNCTION IF EXISTS bundles_chunk_vector_stale()",
    "DROP INDEX IF EXISTS chunk_embedding_hnsw",
    "ALTER TABLE bundles_chunk DROP COLUMN IF EXISTS embedding_vector",
]


def _fetch(connection: Any, sql: str) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchone()


def extension_missing_reason(connection: Any) -> str:
    """Create the `vector` extension when it can be: "" once it exists, else why not."""
    if connection.vendor != "postgresql":
        return f"the database is {connection.vendor}, not PostgreSQL"
    if _fetch(connection, "SELECT 1 FROM pg_extension WHERE extname = 'vector'") is not None:
        return ""
    if _fetch(connection, "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'") is None:
        return (
            "this PostgreSQL server has no pgvector extension to create "
            "(install its package, e.g. postgresql-NN-pgvector, on the database server)"
        )
    try:
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except DatabaseError as error:  # no privilege to create it: keep the exact scan
        return (
            f"the extension is available but could not be created ({error.__class__.__name__}: "
            f"{str(error).strip().splitlines()[0]}); a superuser can run CREATE EXTENSION vector"
        )
    return ""


def install_column(connection: Any) -> None:
    """The column and the trigger that keeps it equal to the blob (not the index)."""
    with connection.cursor() as cursor:
        for statement in INSTALL[:1] + INSTALL[2:]:
            cursor.execute(statement)


def install_index(connection: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute(INSTALL[1])


def install_pgvector(connection: Any) -> bool:
    """Create the extension (when it is available) and the column; False when it is absent."""
    if extension_missing_reason(connection):
        return False
    with connection.cursor() as cursor:
        for statement in INSTALL:
            cursor.execute(statement)
    return True


def uninstall_pgvector(connection: Any) -> None:
    with connection.cursor() as cursor:
        for statement in UNINSTALL:
            cursor.execute(statement)


def has_vector_column(connection: Any) -> bool:
    if connection.vendor != "postgresql":
        return False
    row = _fetch(
        connection,
        "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = 'bundles_chunk' AND column_name = 'embedding_vector'",
    )
    return row is not None
