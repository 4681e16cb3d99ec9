"""The chunks section: hashes, known records, embeddings, and the raw batched insert."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from django.db import connection

from bundles.embeddings import model as semantic
from bundles.imports import context
from bundles.imports.context import ImportContext
from bundles.imports.planner import PlannerStats
from bundles.mirrored import PROVENANCE_KEY
from bundles.models import CHUNK_RECORD_COLUMNS, Chunk, ImportedChunk, Origin
from bundles.secrets import chunk_secret_findings, describe_findings
from formats import memoryai as protocol
from formats.memoryai import ChunkRecord
from memoryadmin.bulk import copy_rows

if TYPE_CHECKING:
    from bundles.imports.proposals import ImportProposals

# Bump when validate_chunk's rules change: chunks imported under older rules are then validated
# again on re-import instead of being taken as known valid (Chunk.import_digest).
CHUNK_RULES = b"memoryadmin chunk rules 2"  # 2: NUL/surrogates everywhere, UTC year range

CARRIED = "import_carried_chunks"  # PostgreSQL: the chunks a run carried, until link_run

CHUNK_INSERT_COLUMNS = (
    "team_id",
    *CHUNK_RECORD_COLUMNS,
    "origin",
    "is_dna",
    "is_deleted",
    "deleted_at",
    "suspicious",
    "updated_at",
    "standalone",
    "import_digest",
    "secret_findings",
)


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs 2.5x (100k of them)
class _KnownChunk:
    """A held chunk's record that is byte for byte the one the chunk was imported from (which
    validated then, under the same rules): what the import still needs of it, read as is."""

    id: int | None
    content: str
    content_hash: str
    declared_hash: str | None
    metadata: dict[str, Any]

    @classmethod
    def of(cls, raw: dict[str, Any], true_hash: str) -> _KnownChunk:
        declared = raw.get("content_hash")
        if isinstance(declared, str):  # as validate_chunk reads it
            declared = declared.lower().removeprefix("sha256:")
        return cls(
            id=raw.get("id"),
            content=raw["content"],
            content_hash=true_hash,
            declared_hash=declared if declared not in (None, true_hash) else None,
            metadata=raw.get("metadata") or {},
        )


class ChunkWriter:
    """Writes the chunks section and fills `ctx.chunk_ids` for the edges."""

    def __init__(
        self, ctx: ImportContext, planner: PlannerStats, proposals: ImportProposals
    ) -> None:
        self.ctx = ctx
        self.planner = planner
        self.proposals = proposals
        self.db_datetime = connection.ops.adapt_datetimefield_value
        # A team that holds no chunk yet needs no look-up of held hashes: the insert's
        # ON CONFLICT answers for duplicates within the bundle (and concurrent writers).
        self.team_was_empty = (
            connection.vendor == "postgresql" and not Chunk.objects.filter(team=ctx.team).exists()
        )
        # The digest of a chunk record covers the rules and the embedding_dim it was validated
        # against; the same record under the same rules and dim is valid again.
        self.digest_base = hashlib.sha256(
            b"%s\ndim=%d\n" % (CHUNK_RULES, ctx.manifest.embedding_dim)
        )
        self.held_digests: dict[str, bytes | None] = {}
        self.not_standalone: set[str] = set()
        self.claimed_provenance = 0
        self.embeddings = {"kept": 0, "foreign_kept": 0, "dropped_option": 0, "dropped_model": 0}
        self.adopted = False
        self.carried_table = False  # PostgreSQL: the carried chunks wait in CARRIED

    def write(self, records: Iterator[tuple[int, Any, bytes]]) -> None:
        """Batches of (index, record, record digest). The encoded record is not kept: orjson's
        output holds a 32 KiB buffer whatever its length (1,000 of them were 31 MB)."""
        pending: list[tuple[int, Any, bytes]] = []
        base = self.digest_base
        for index, raw, data in records:
            check = base.copy()
            check.update(data)
            pending.append((index, raw, check.digest()))
            if len(pending) >= context.BATCH:
                self._chunk_batch(pending)
                pending = []
        if pending:
            self._chunk_batch(pending)

    def _chunk_batch(self, pending: list[tuple[int, Any, bytes]]) -> None:
        """Hashes first, one look-up for the batch. A chunk the team holds already (a
        re-import) that was imported from this very record (same canonical bytes, rules and
        embedding_dim: `import_digest`) is known valid and only counted; another held chunk
        is validated field by field, its embedding checked for type and length only."""
        hashes: dict[int, str] = {}
        for index, raw, _ in pending:
            content = raw.get("content") if isinstance(raw, dict) else None
            if isinstance(content, str):
                # lone surrogates cannot be hashed: left to the full validation to report
                with contextlib.suppress(UnicodeEncodeError):
                    hashes[index] = protocol.content_hash(content)
        existing = {} if self.team_was_empty else self._held(set(hashes.values()))
        batch: list[tuple[int, ChunkRecord | _KnownChunk, bytes]] = []
        known_ok = self.ctx.options.propose_to is None  # proposals need the full record
        for index, raw, record_digest in pending:
            digest = hashes.get(index)
            record: ChunkRecord | _KnownChunk | None
            if known_ok and digest in existing and self.held_digests.get(digest) == record_digest:
                record = _KnownChunk.of(raw, digest)
            else:
                record = self.ctx.validate(
                    "chunks", index, raw, known=digest, held=digest in existing
                )
            if record is None:
                self.ctx.report.counts["chunks"]["skipped_invalid"] += 1
                continue
            batch.append((index, record, record_digest))
        self._flush_chunks(batch, existing)

    def _held(self, hashes: set[str]) -> dict[str, int]:
        """content hash -> id of the team's chunks among `hashes`."""
        if not hashes:
            return {}
        table = connection.ops.quote_name(Chunk._meta.db_table)
        if connection.vendor == "postgresql":  # one array literal: hex digits need no quoting
            where, params = "content_hash = ANY(%s::text[])", ["{" + ",".join(hashes) + "}"]
        else:
            where, params = f"content_hash IN ({', '.join(['%s'] * len(hashes))})", list(hashes)
        self.planner.analyze_before_look_up()
        held: dict[str, int] = {}
        self.held_digests.clear()
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT content_hash, id, standalone, import_digest FROM {table} "  # noqa: S608
                f"WHERE team_id = %s AND {where}",
                [self.ctx.team.pk, *params],
            )
            for digest, pk, standalone, record_digest in cursor.fetchall():
                held[digest] = pk
                self.held_digests[digest] = bytes(record_digest) if record_digest else None
                if not standalone:
                    self.not_standalone.add(digest)
        return held

    def _embedding_for(self, record: ChunkRecord) -> tuple[bytes | None, str, int, str | None]:
        """(embedding, model, dim) to store, and the outcome counted once the row is in."""
        if record.embedding is None:
            return None, "", 0, None
        ctx = self.ctx
        model = record.embedding_model or ctx.manifest.embedding_model
        dim = ctx.manifest.embedding_dim
        if not ctx.options.keep_embeddings:
            return None, "", 0, "dropped_option"
        if not ctx.settings.is_set and (model or semantic.available()):
            # The team's model is the model we run when we run one (issue #16), else the
            # first bundle's.
            if semantic.available():
                model_dim = (semantic.MODEL_NAME, semantic.MODEL_DIM)
            else:
                model_dim = (model, dim)
            ctx.settings.embedding_model, ctx.settings.embedding_dim = model_dim
            ctx.settings.updated_at = ctx.now
            ctx.settings.save(update_fields=["embedding_model", "embedding_dim", "updated_at"])
            self.adopted = True
        if (model, dim) == (ctx.settings.embedding_model, ctx.settings.embedding_dim):
            return record.embedding, model, dim, "kept"
        team_model = ctx.settings.embedding_model
        if semantic.runs(model) and semantic.runs(team_model) and dim == ctx.settings.embedding_dim:
            return record.embedding, team_model, dim, "kept"  # another name of the same model
        if ctx.options.accept_foreign_embeddings:
            return record.embedding, model, dim, "foreign_kept"
        return None, "", 0, "dropped_model"

    def _flush_chunks(
        self,
        batch: list[tuple[int, ChunkRecord | _KnownChunk, bytes]],
        existing: dict[str, int],
    ) -> None:
        report, now = self.ctx.report, self.ctx.now
        counts = report.counts["chunks"]
        by_hash: dict[str, ChunkRecord | _KnownChunk] = {}
        indexes: dict[str, int] = {}
        record_digests: dict[str, bytes] = {}
        flagged: set[str] = set()
        for index, record, record_digest in batch:
            if record.declared_hash is not None:
                report.warn(
                    f"chunks[{index}] (id {record.id}): content_hash {record.declared_hash[:16]}… "
                    f"does not match its content; used the true hash {record.content_hash[:16]}…"
                )
            if record.content_hash in by_hash:
                counts["skipped_duplicate"] += 1
                continue
            by_hash[record.content_hash] = record
            indexes[record.content_hash] = index
            record_digests[record.content_hash] = record_digest
            if isinstance(record, ChunkRecord):
                self.proposals.collect(index, record)
            if PROVENANCE_KEY in record.metadata:  # provenance is ours to write, never imported
                self.claimed_provenance += 1
            hint = protocol.prompt_injection_hint(record.content)
            if hint is not None:
                flagged.add(record.content_hash)
                report.warn(
                    f"chunks[{index}] (id {record.id}, hash {record.content_hash[:16]}…) looks "
                    f"like prompt-injection text ({hint}); stored as data and flagged"
                )
        held = [digest for digest in by_hash if digest in existing]
        mirrored = [existing[digest] for digest in held if digest in self.not_standalone]
        if mirrored:  # mirror-only chunks the bundle also carries now stand on their own
            Chunk.objects.filter(pk__in=mirrored, standalone=False).update(
                standalone=True, updated_at=now
            )
            self.not_standalone.difference_update(held)
        new_rows = []
        outcomes: list[tuple[str, str | None]] = []
        db_datetime = self.db_datetime
        for digest, record in by_hash.items():
            if digest in existing or not isinstance(record, ChunkRecord):
                counts["skipped_duplicate"] += 1
                continue
            # New rows only: a held chunk keeps its row (and was scanned when it came in).
            findings = chunk_secret_findings(record.content)
            if findings:
                report.warn(
                    f"chunks[{indexes[digest]}] (id {record.id}, hash {digest[:16]}…) looks like "
                    f"it holds a secret ({describe_findings(findings)}); stored as data, flagged "
                    "and masked where shown"
                )
            embedding, model, dim, outcome = self._embedding_for(record)
            outcomes.append((digest, outcome))
            new_rows.append(
                (
                    self.ctx.team.pk,
                    record.content,
                    digest,
                    record.memory_type,
                    embedding,
                    model,
                    dim,
                    self._json(record.tags),
                    record.zone,
                    record.importance,
                    record.is_pinned,
                    record.decay_score,
                    record.tier,
                    db_datetime(record.created_at or now),
                    db_datetime(record.accessed_at),
                    db_datetime(record.valid_until),
                    self._json(_unclaimed(record.metadata)),
                    Origin.IMPORT.value,
                    record.is_dna,
                    False,
                    None,
                    digest in flagged,
                    db_datetime(now),
                    True,
                    record_digests[digest],
                    self._json(findings),
                )
            )
        local = {digest: existing[digest] for digest in held}
        inserted = self._insert_chunks(new_rows)
        local.update(inserted or {})
        for digest, outcome in outcomes:
            # rows already in (earlier in this bundle, or a concurrent import) are duplicates
            if inserted is None or digest in inserted:
                counts["inserted"] += 1
                if outcome is not None:
                    self.embeddings[outcome] += 1
            else:
                counts["skipped_duplicate"] += 1
        self.planner.analyze_while_growing(len(new_rows))
        if len(local) < len(by_hash):  # SQLite, or rows a concurrent import inserted first
            local.update(self._held({digest for digest in by_hash if digest not in local}))
        self.ctx.chunk_ids.update(
            {
                record.id: local[record.content_hash]
                for _, record, _ in batch
                if record.id is not None and record.content_hash in local
            }
        )
        new = set(inserted) if inserted is not None else {digest for digest, _ in outcomes}
        self._link_run(local, new)

    def _link_run(self, local: dict[str, int], inserted: set[str]) -> None:
        """The chunks this run carried (and created): on PostgreSQL into a temporary table
        (no WAL, no index), whose rows `link_run` writes for the ImportRun at the end."""
        run_id = self.ctx.run_id
        if run_id is None or not local:
            return
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor, connection.wrap_database_errors:
                if not self.carried_table:  # (TRUNCATE: a run before in this transaction)
                    columns = "(chunk_id bigint NOT NULL, inserted boolean NOT NULL) ON COMMIT DROP"
                    cursor.execute(f"CREATE TEMP TABLE IF NOT EXISTS {CARRIED} {columns}")
                    cursor.execute(f"TRUNCATE {CARRIED}")
                    self.carried_table = True
                # COPY's text form at once (an integer and t/f need no escaping)
                rows = [f"{pk}\t{('f', 't')[digest in inserted]}\n" for digest, pk in local.items()]
                with cursor.cursor.copy(f"COPY {CARRIED} (chunk_id, inserted) FROM STDIN") as copy:
                    copy.write("".join(rows))
            return
        rows = [(run_id, pk, digest in inserted) for digest, pk in local.items()]
        table = connection.ops.quote_name(ImportedChunk._meta.db_table)
        with connection.cursor() as cursor:
            values = "(run_id, chunk_id, inserted) VALUES (%s, %s, %s)"
            conflict = "ON CONFLICT (run_id, chunk_id) DO NOTHING"
            cursor.executemany(f"INSERT INTO {table} {values} {conflict}", rows)

    def link_run(self) -> None:
        """The run's ImportedChunk rows: one per chunk, inserted when any record inserted it."""
        if not self.carried_table:
            return
        self.carried_table = False
        table = connection.ops.quote_name(ImportedChunk._meta.db_table)
        with connection.cursor() as cursor:
            rows = f"SELECT %s, chunk_id, bool_or(inserted) FROM {CARRIED} GROUP BY chunk_id"  # noqa: S608
            sql = f"INSERT INTO {table} (run_id, chunk_id, inserted) {rows} ORDER BY chunk_id"
            cursor.execute(sql, [self.ctx.run_id])
            cursor.execute(f"DROP TABLE {CARRIED}")

    def _json(self, value: Any) -> str:
        """JSON text for a jsonb/JSON column (COPY and SQLite take it as it is)."""
        try:
            return orjson.dumps(value).decode("utf-8")
        except TypeError:  # integers past 64 bits
            return json.dumps(value)

    def _insert_chunks(self, rows: list[tuple[Any, ...]]) -> dict[str, int] | None:
        """Raw insert: Django's bulk_create spent most of a 100k import compiling SQL.

        PostgreSQL: COPY into a scratch table, then one INSERT … SELECT that also answers the
        new ids. ON CONFLICT DO NOTHING: a concurrent import of the same content must not fail
        this one. Returns content hash -> id of the rows inserted (PostgreSQL; SQLite: None,
        every row is taken as inserted: its look-up ran first, and it writes one at a time).
        """
        if not rows:
            return {}
        if connection.vendor == "postgresql":
            return dict(
                copy_rows(
                    Chunk,
                    CHUNK_INSERT_COLUMNS,
                    rows,
                    conflict=(
                        "ON CONFLICT (team_id, content_hash) DO NOTHING RETURNING content_hash, id"
                    ),
                )
            )
        table = connection.ops.quote_name(Chunk._meta.db_table)
        columns = ", ".join(connection.ops.quote_name(c) for c in CHUNK_INSERT_COLUMNS)
        placeholders = ", ".join(["%s"] * len(CHUNK_INSERT_COLUMNS))
        sql = (
            f"INSERT INTO {table} ({columns}) VALUES ({placeholders}) "  # noqa: S608
            "ON CONFLICT (team_id, content_hash) DO NOTHING"
        )
        # executemany: SQLite loops in C, psycopg pipelines; a multi-row VALUES measured
        # slower on PostgreSQL (psycopg parses 10k+ placeholders in Python).
        with connection.cursor() as cursor:
            cursor.executemany(sql, rows)
        return None


def _unclaimed(metadata: dict[str, Any]) -> dict[str, Any]:
    """A copy with our provenance key renamed: a bundle cannot claim where a chunk came from."""
    if PROVENANCE_KEY not in metadata:
        return metadata
    copy = {k: v for k, v in metadata.items() if k != PROVENANCE_KEY}
    copy[f"{PROVENANCE_KEY}_claimed"] = metadata[PROVENANCE_KEY]
    return copy
