"""Vector search over the brain's chunks (issue #16): pgvector where the extension exists.

PostgreSQL with the `vector` extension available (or already created): a `vector(384)` column
`embedding_vector` (the model we run, bundles.embeddings.model) with an HNSW index for cosine
distance, and a trigger that clears it whenever `embedding` is rewritten without it (an import
replacing the bytes), so it never disagrees with the stored blob. Without the extension
(SQLite, plain PostgreSQL) nothing changes: search scans the float32 `embedding` blobs exactly
(bundles.embeddings.store). The column is not on the Django model (SQLite has no vector type).
Installing pgvector later: `bundles.embeddings.schema.install_pgvector` runs the same statements
(docs/brain.md, "Embeddings").
"""

from django.db import migrations

from bundles.embeddings.schema import install_pgvector, uninstall_pgvector


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        install_pgvector(schema_editor.connection)


def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        uninstall_pgvector(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("bundles", "0007_chunk_search"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
