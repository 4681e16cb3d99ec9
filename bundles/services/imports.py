"""Import a bundle (§3.8): validate record by record, insert in batches, one transaction."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import IO, Any

import orjson
from django.core.cache import cache
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from bundles.mirror import PROVENANCE_KEY
from bundles.models import (
    CHUNK_RECORD_COLUMNS,
    Agent,
    BrainSettings,
    Chunk,
    Entity,
    ImportJob,
    JobState,
    L2Session,
    MemoryEdge,
    MoodState,
    Origin,
)
from bundles.secrets import chunk_secret_findings, describe_findings
from formats.memoryai import protocol
from formats.memoryai.protocol import SECTIONS, BundleError, ChunkRecord, EdgeRecord, EntityRecord
from formats.memoryai.reader import BundleFile
from memoryadmin.audit import Actor, audit_record
from memoryadmin.bulk import copy_rows, json_loads
from memoryadmin.models import Team
from webhooks import events as webhook_events
from webhooks.services import event_emit

logger = logging.getLogger(__name__)

BATCH = 1000
MAX_WARNINGS = 100
PROGRESS_EVERY = 2000
ANALYZE_EVERY = 20_000  # PostgreSQL: chunks inserted before the planner needs fresh stats
SPOOL_BUFFER = 1 << 20  # checksum spools are written a record at a time through this buffer
# Bump when validate_chunk's rules change: chunks imported under older rules are then validated
# again on re-import instead of being taken as known valid (Chunk.import_digest).
CHUNK_RULES = b"memoryadmin chunk rules 2"  # 2: NUL/surrogates everywhere, UTC year range
# The largest co_activation_count / frequency (BigIntegerField): sums saturate here, warned.
COUNTER_MAX = 2**63 - 1

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

EDGE_COLUMNS = (
    "team_id",
    "source_id",
    "target_id",
    "edge_type",
    "weight",
    "co_activation_count",
    "created_at",
    "updated_at",
)
ENTITY_COLUMNS = ("team_id", "name", "frequency", "first_seen", "last_seen", "is_dna", "updated_at")

SectionReader = Callable[[str], Iterator[Any]]
Progress = Callable[[int, int], None]  # (records done, records declared)


@dataclass(frozen=True)
class ImportOptions:
    keep_embeddings: bool = True
    accept_foreign_embeddings: bool = False
    propose_to: int | None = None  # repository id: DNA chunks become proposals there


@dataclass
class _Report:
    bundle_format: str
    bundle_version: int
    embedding_model_match: bool = False
    counts: dict[str, dict[str, int]] = field(
        default_factory=lambda: {
            "chunks": {"inserted": 0, "skipped_duplicate": 0, "skipped_invalid": 0},
            "memory_edges": {"upserted": 0, "skipped": 0},
            "entities": {"upserted": 0},
            "l2_sessions": {"inserted": 0},
            "mood_states": {"upserted": 0},
            "agents": {"upserted": 0},
        }
    )
    # Warnings by section (None: the wrap-up's), reported in SECTIONS order whatever order
    # the file's sections came in, so the report does not depend on the file's key order.
    section: str | None = None
    buckets: dict[str | None, list[str]] = field(default_factory=dict)
    omitted: dict[str | None, int] = field(default_factory=dict)

    def warn(self, message: str) -> None:
        bucket = self.buckets.setdefault(self.section, [])
        if len(bucket) < MAX_WARNINGS:
            bucket.append(message)
        else:
            self.omitted[self.section] = self.omitted.get(self.section, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        warnings: list[str] = []
        omitted = 0
        for name in (*SECTIONS, None):
            for message in self.buckets.get(name, ()):
                if len(warnings) < MAX_WARNINGS:
                    warnings.append(message)
                else:
                    omitted += 1
            omitted += self.omitted.get(name, 0)
        if omitted:
            warnings.append(f"{omitted} more warnings were left out of this report")
        return {
            "success": True,
            "report": {
                "bundle_format": self.bundle_format,
                "bundle_version": self.bundle_version,
                "embedding_model_match": self.embedding_model_match,
                **{name: dict(values) for name, values in self.counts.items()},
                "warnings": warnings,
            },
        }


@dataclass(frozen=True, slots=True)
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


class _Importer:
    """One import run inside one transaction. Keeps only the producer-id → local-id map."""

    def __init__(
        self,
        *,
        team: Team,
        envelope: protocol.Envelope,
        options: ImportOptions,
        progress: Progress | None,
        actor: Actor | None = None,
    ) -> None:
        self.team = team
        self.actor = actor or Actor.system()
        self.proposal_drafts: Any = None  # bundles.services.proposals.ImportProposalDrafts
        self.claimed_provenance = 0
        self.envelope = envelope
        self.manifest = envelope.manifest
        self.options = options
        self.progress = progress
        self.report = _Report(envelope.format, envelope.version)
        self.settings, _ = BrainSettings.objects.select_for_update().get_or_create(team=team)
        self.chunk_ids: dict[int, int] = {}
        self.now = timezone.now()
        self.db_datetime = connection.ops.adapt_datetimefield_value
        # A team that holds no chunk yet needs no look-up of held hashes: the insert's
        # ON CONFLICT answers for duplicates within the bundle (and concurrent writers).
        self.team_was_empty = (
            connection.vendor == "postgresql" and not Chunk.objects.filter(team=team).exists()
        )
        # The digest of a chunk record covers the rules and the embedding_dim it was validated
        # against; the same record under the same rules and dim is valid again.
        self.digest_base = hashlib.sha256(
            b"%s\ndim=%d\n" % (CHUNK_RULES, self.manifest.embedding_dim)
        )
        self.held_digests: dict[str, bytes | None] = {}
        self.done = 0
        self.total = sum(self.manifest.counts.get(name, 0) for name in SECTIONS)
        if progress is not None:
            progress(0, self.total)
        self.embeddings = {"kept": 0, "foreign_kept": 0, "dropped_option": 0, "dropped_model": 0}
        self.adopted = False
        self._json_field = Chunk._meta.get_field("metadata")
        self._inserted_since_analyze = 0
        self._analyze_at = ANALYZE_EVERY
        self._analyze_if_stale()
        self.spools: dict[str, IO[bytes]] = {}
        self.edge_spool: IO[bytes] | None = None
        self.chunks_read = False
        self.not_standalone: set[str] = set()
        self.saturated: dict[str, int] = {}  # section -> records whose counter hit the max

    # -- driving -----------------------------------------------------------------------------

    def run(self, read_section: SectionReader, head: dict[str, Any]) -> dict[str, Any]:
        checksum = protocol.StreamingChecksum(head, self.envelope.sections)
        for section in SECTIONS:
            if self.envelope.sections.get(section) != "array":
                continue
            self.report.section = section
            sink = partial(checksum.feed_encoded, section)
            items = self._feed(section, read_section(section), sink)
            self._section(section, items)
        return self._finish(checksum)

    def _section(self, section: str, items: Iterator[tuple[int, Any, bytes]]) -> None:
        """Chunks take (index, record, canonical bytes); the other sections (index, record)."""
        if section == "chunks":
            self._section_chunks(items)
        else:
            getattr(self, f"_section_{section}")((index, raw) for index, raw, _ in items)

    # -- one streamed pass over a file: sections in the file's order -------------------------

    def stream_section(self, section: str, records: Iterator[Any]) -> None:
        """Import one section as the file's single pass reaches it. Its records' canonical
        bytes go to a spool for the checksum (hashed at the end in the checksum's key order);
        edges wait in a spool of their own when the chunks they name have not been read yet."""
        spool = tempfile.TemporaryFile(buffering=SPOOL_BUFFER)  # noqa: SIM115 - finish_stream
        self.spools[section] = spool
        self.report.section = section
        items = self._feed(section, records, partial(_spool_line, spool.write))
        if section == "memory_edges" and not self.chunks_read:
            self.edge_spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed in finish_stream
            for _, _, data in items:
                _spool_line(self.edge_spool.write, data)
            return
        self._section(section, items)
        if section == "chunks":
            self.chunks_read = True

    def finish_stream(self, envelope: protocol.Envelope, head: dict[str, Any]) -> dict[str, Any]:
        try:
            if self.edge_spool is not None:
                self.report.section = "memory_edges"
                self.edge_spool.seek(0)
                self._section_memory_edges(
                    (index, json_loads(line)) for index, line in enumerate(self.edge_spool)
                )
            checksum = protocol.StreamingChecksum(head, envelope.sections)
            for section in SECTIONS:
                spool = self.spools.get(section)
                if spool is None:
                    continue
                spool.seek(0)
                rest = b""
                while block := spool.read(1 << 20):
                    block, _, tail = (rest + block).rpartition(b"\n")
                    checksum.feed_encoded_lines(section, block + b"\n" if block else b"")
                    rest = tail
        finally:
            self.close_spools()
        return self._finish(checksum)

    def close_spools(self) -> None:
        for spool in (*self.spools.values(), self.edge_spool):
            if spool is not None:
                spool.close()
        self.spools, self.edge_spool = {}, None

    def _finish(self, checksum: protocol.StreamingChecksum) -> dict[str, Any]:
        self.report.section = None
        if self._inserted_since_analyze >= ANALYZE_EVERY:
            self._analyze()
        self._finish_checksum(checksum)
        self._finish_embeddings()
        if self.claimed_provenance:
            self.report.warn(
                f"{self.claimed_provenance} chunks carried metadata.{PROVENANCE_KEY}; kept as "
                f"metadata.{PROVENANCE_KEY}_claimed (only this server writes provenance)"
            )
        proposals = self._propose()
        result = self.report.as_dict()
        if proposals is not None:
            result["report"]["proposals"] = proposals
        return result

    def _collect_proposal(self, index: int, record: ChunkRecord) -> None:
        if self.options.propose_to is None or not record.is_dna:
            return
        from bundles.services.proposals import ImportProposalDrafts
        from reviews.services.agent_proposals import ChunkToPropose

        if self.proposal_drafts is None:
            self.proposal_drafts = ImportProposalDrafts(
                team=self.team, actor=self.actor, repository_id=self.options.propose_to
            )
        self.proposal_drafts.add(
            ChunkToPropose(
                label=f"chunks[{index}]",
                content=record.content,
                content_hash=record.content_hash,
                memory_type=record.memory_type,
                tags=list(record.tags),
                is_pinned=record.is_pinned,
                created_at=record.created_at,
            )
        )

    def _propose(self) -> dict[str, Any] | None:
        if self.options.propose_to is None:
            return None
        from bundles.services.proposals import ImportProposalDrafts, import_proposals_create

        drafts = self.proposal_drafts or ImportProposalDrafts(
            team=self.team, actor=self.actor, repository_id=self.options.propose_to
        )
        summary, warnings = import_proposals_create(team=self.team, actor=self.actor, drafts=drafts)
        for warning in warnings:
            self.report.warn(warning)
        return summary

    def _feed(
        self, section: str, records: Iterator[Any], sink: Callable[[bytes], Any]
    ) -> Iterator[tuple[int, Any, bytes]]:
        """(index, record, canonical bytes) per record; the bytes also go to `sink` (the
        checksum, or a spool hashed at the end), and progress is published as they pass."""
        encode = protocol.encode_record
        for index, raw in enumerate(records):
            try:
                data = encode(raw)[1]
                sink(data)
            except BundleError as exc:
                raise BundleError(exc.code, exc.message, f"{section}[{index}]") from exc
            self.done += 1
            if self.progress is not None and self.done % PROGRESS_EVERY == 0:
                self.progress(self.done, self.total)
            yield index, raw, data

    def _validate(
        self, section: str, index: int, raw: Any, *, known: str | None = None, held: bool = False
    ) -> Any | None:
        try:
            if section == "chunks":
                return protocol.validate_chunk(
                    raw,
                    embedding_dim=self.manifest.embedding_dim,
                    path=f"chunks[{index}]",
                    decode_embedding=not held,
                    known_hash=known,
                )
            return protocol.validate_record(
                section,
                raw,
                embedding_dim=self.manifest.embedding_dim,
                path=f"{section}[{index}]",
            )
        except BundleError as exc:
            self.report.warn(f"skipped invalid record {exc}")
            return None

    # -- chunks ------------------------------------------------------------------------------

    def _section_chunks(self, records: Iterator[tuple[int, Any, bytes]]) -> None:
        """Batches of (index, record, record digest). The encoded record is not kept: orjson's
        output holds a 32 KiB buffer whatever its length (1,000 of them were 31 MB)."""
        pending: list[tuple[int, Any, bytes]] = []
        base = self.digest_base
        for index, raw, data in records:
            check = base.copy()
            check.update(data)
            pending.append((index, raw, check.digest()))
            if len(pending) >= BATCH:
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
        known_ok = self.options.propose_to is None  # proposals need the full record
        for index, raw, record_digest in pending:
            digest = hashes.get(index)
            record: ChunkRecord | _KnownChunk | None
            if known_ok and digest in existing and self.held_digests.get(digest) == record_digest:
                record = _KnownChunk.of(raw, digest)
            else:
                record = self._validate("chunks", index, raw, known=digest, held=digest in existing)
            if record is None:
                self.report.counts["chunks"]["skipped_invalid"] += 1
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
        self._analyze_before_look_up()
        held: dict[str, int] = {}
        self.held_digests.clear()
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT content_hash, id, standalone, import_digest FROM {table} "  # noqa: S608
                f"WHERE team_id = %s AND {where}",
                [self.team.pk, *params],
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
        model = record.embedding_model or self.manifest.embedding_model
        dim = self.manifest.embedding_dim
        if not self.options.keep_embeddings:
            return None, "", 0, "dropped_option"
        if not self.settings.is_set and model:
            self.settings.embedding_model, self.settings.embedding_dim = model, dim
            self.settings.updated_at = self.now
            self.settings.save(update_fields=["embedding_model", "embedding_dim", "updated_at"])
            self.adopted = True
        if (model, dim) == (self.settings.embedding_model, self.settings.embedding_dim):
            return record.embedding, model, dim, "kept"
        if self.options.accept_foreign_embeddings:
            return record.embedding, model, dim, "foreign_kept"
        return None, "", 0, "dropped_model"

    def _flush_chunks(
        self,
        batch: list[tuple[int, ChunkRecord | _KnownChunk, bytes]],
        existing: dict[str, int],
    ) -> None:
        counts = self.report.counts["chunks"]
        by_hash: dict[str, ChunkRecord | _KnownChunk] = {}
        indexes: dict[str, int] = {}
        record_digests: dict[str, bytes] = {}
        flagged: set[str] = set()
        for index, record, record_digest in batch:
            if record.declared_hash is not None:
                self.report.warn(
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
                self._collect_proposal(index, record)
            if PROVENANCE_KEY in record.metadata:  # provenance is ours to write, never imported
                self.claimed_provenance += 1
            hint = protocol.prompt_injection_hint(record.content)
            if hint is not None:
                flagged.add(record.content_hash)
                self.report.warn(
                    f"chunks[{index}] (id {record.id}, hash {record.content_hash[:16]}…) looks "
                    f"like prompt-injection text ({hint}); stored as data and flagged"
                )
        held = [digest for digest in by_hash if digest in existing]
        mirrored = [existing[digest] for digest in held if digest in self.not_standalone]
        if mirrored:  # mirror-only chunks the bundle also carries now stand on their own
            Chunk.objects.filter(pk__in=mirrored, standalone=False).update(
                standalone=True, updated_at=self.now
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
                self.report.warn(
                    f"chunks[{indexes[digest]}] (id {record.id}, hash {digest[:16]}…) looks like "
                    f"it holds a secret ({describe_findings(findings)}); stored as data, flagged "
                    "and masked where shown"
                )
            embedding, model, dim, outcome = self._embedding_for(record)
            outcomes.append((digest, outcome))
            new_rows.append(
                (
                    self.team.pk,
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
                    db_datetime(record.created_at or self.now),
                    db_datetime(record.accessed_at),
                    db_datetime(record.valid_until),
                    self._json(_unclaimed(record.metadata)),
                    Origin.IMPORT.value,
                    record.is_dna,
                    False,
                    None,
                    digest in flagged,
                    db_datetime(self.now),
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
        self._analyze_while_growing(len(new_rows))
        if len(local) < len(by_hash):  # SQLite, or rows a concurrent import inserted first
            local.update(self._held({digest for digest in by_hash if digest not in local}))
        for _, record, _ in batch:
            if record.id is not None and record.content_hash in local:
                self.chunk_ids[record.id] = local[record.content_hash]

    def _analyze_if_stale(self) -> None:
        """PostgreSQL plans the hash look-ups as table scans until the chunk table has been
        analysed (no stats: each IN value is assumed to match 0.5% of rows). A 100k import
        is 5x slower without this; ANALYZE counts this transaction's own new rows."""
        if connection.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT n_mod_since_analyze, n_live_tup FROM pg_stat_user_tables "
                "WHERE relid = %s::regclass",
                [Chunk._meta.db_table],
            )
            row = cursor.fetchone()
        if row is not None and row[0] > max(ANALYZE_EVERY, row[1] // 10):
            self._analyze()

    def _analyze(self) -> None:
        """Stats for the look-up's columns only: a whole-table ANALYZE also samples the
        embeddings and JSON columns and took 3x as long (0.37 s against 0.13 s at 100k)."""
        self._inserted_since_analyze = 0
        if connection.vendor != "postgresql":
            return
        table = connection.ops.quote_name(Chunk._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {table} (team_id, content_hash)")

    def _analyze_while_growing(self, inserted: int) -> None:
        self._inserted_since_analyze += inserted

    def _analyze_before_look_up(self) -> None:
        """Only a look-up needs the stats: an import into an empty team makes none (unless
        its bundle repeats content), so it analyses once, at the end, for the next import."""
        if self._inserted_since_analyze >= self._analyze_at:
            self._analyze_at *= 2  # stats of a table this size stay good while it doubles
            self._analyze()

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

    # -- edges -------------------------------------------------------------------------------

    def _section_memory_edges(self, records: Iterator[tuple[int, Any]]) -> None:
        counts = self.report.counts["memory_edges"]
        merged: dict[tuple[int, int, str], list[Any]] = {}
        for index, raw in records:
            record: EdgeRecord | None = self._validate("memory_edges", index, raw)
            if record is None:
                counts["skipped"] += 1
                continue
            source = self.chunk_ids.get(record.chunk_a)
            target = self.chunk_ids.get(record.chunk_b)
            if source is None or target is None:
                counts["skipped"] += 1
                self.report.warn(
                    f"skipped memory_edges[{index}]: chunk "
                    f"{record.chunk_a if source is None else record.chunk_b} is not a chunk of "
                    "this bundle"
                )
                continue
            key = (source, target, record.edge_type)
            row = merged.get(key)
            if row is None:
                merged[key] = [
                    record.weight,
                    record.co_activation_count,
                    record.created_at or self.now,
                    record.updated_at or self.now,
                ]
            else:  # the same edge twice in one bundle: apply §3.8 within the batch too
                row[0] = max(row[0], record.weight)
                row[1] = min(row[1] + record.co_activation_count, COUNTER_MAX)
            counts["upserted"] += 1
            if len(merged) >= BATCH:
                self._upsert_edges(merged)
                merged = {}
        if merged:
            self._upsert_edges(merged)
        self._warn_saturated("memory_edges", "co_activation_count")

    def _warn_saturated(self, section: str, column: str) -> None:
        saturated = self.saturated.pop(section, 0)
        if saturated:
            self.report.warn(
                f"{section}: {saturated} records reached the largest {column} "
                f"({COUNTER_MAX}); what would have gone past it was not added"
            )

    def _count_saturated(self, section: str, values: list[tuple[Any, ...]]) -> None:
        """RETURNING rows (the counter after the upsert): those at the maximum."""
        hits = sum(1 for (value,) in values if value is not None and int(value) >= COUNTER_MAX)
        if hits:
            self.saturated[section] = self.saturated.get(section, 0) + hits

    def _upsert_edges(self, merged: dict[tuple[int, int, str], list[Any]]) -> None:
        table = connection.ops.quote_name(MemoryEdge._meta.db_table)
        greatest = "GREATEST" if connection.vendor == "postgresql" else "MAX"
        update = (
            "ON CONFLICT (team_id, source_id, target_id, edge_type) DO UPDATE SET "
            f"co_activation_count = {_saturating_sum(table, 'co_activation_count')}, "
            f"weight = {greatest}({table}.weight, excluded.weight), "
            "updated_at = %s RETURNING co_activation_count"
        )
        if connection.vendor == "postgresql":
            rows = [
                (self.team.pk, source, target, edge_type, weight, count, created, updated)
                for (source, target, edge_type), (weight, count, created, updated) in merged.items()
            ]
            returned = copy_rows(MemoryEdge, EDGE_COLUMNS, rows, conflict=update, params=[self.now])
            self._count_saturated("memory_edges", returned)
            return
        values, params = [], []
        for (source, target, edge_type), (weight, count, created, updated) in merged.items():
            values.append("(%s, %s, %s, %s, %s, %s, %s, %s)")
            params.extend(
                [
                    self.team.pk,
                    source,
                    target,
                    edge_type,
                    weight,
                    count,
                    self.db_datetime(created),
                    self.db_datetime(updated),
                ]
            )
        sql = (
            f"INSERT INTO {table} (team_id, source_id, target_id, edge_type, weight, "  # noqa: S608
            f"co_activation_count, created_at, updated_at) VALUES {', '.join(values)} {update}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, self.db_datetime(self.now)])
            self._count_saturated("memory_edges", cursor.fetchall())

    # -- entities ----------------------------------------------------------------------------

    def _section_entities(self, records: Iterator[tuple[int, Any]]) -> None:
        merged: dict[str, EntityRecord] = {}
        for index, raw in records:
            record: EntityRecord | None = self._validate("entities", index, raw)
            if record is None:
                continue
            previous = merged.get(record.name)
            merged[record.name] = record if previous is None else _merge_entity(previous, record)
            self.report.counts["entities"]["upserted"] += 1
            if len(merged) >= BATCH:
                self._upsert_entities(merged)
                merged = {}
        if merged:
            self._upsert_entities(merged)
        self._warn_saturated("entities", "frequency")

    def _upsert_entities(self, merged: dict[str, EntityRecord]) -> None:
        table = connection.ops.quote_name(Entity._meta.db_table)
        values, params = [], []
        for record in merged.values():
            values.append("(%s, %s, %s, %s, %s, %s, %s)")
            params.extend(
                [
                    self.team.pk,
                    record.name,
                    record.frequency,
                    self.db_datetime(record.first_seen),
                    self.db_datetime(record.last_seen),
                    record.is_dna,
                    self.db_datetime(self.now),
                ]
            )

        def pick(column: str, op: str) -> str:
            old, new = f"{table}.{column}", f"excluded.{column}"
            return (
                f"{column} = CASE WHEN {old} IS NULL THEN {new} WHEN {new} IS NULL THEN {old} "
                f"WHEN {new} {op} {old} THEN {new} ELSE {old} END"
            )

        update = (
            "ON CONFLICT (team_id, name) DO UPDATE SET "
            f"frequency = {_saturating_sum(table, 'frequency')}, "
            f"{pick('first_seen', '<')}, {pick('last_seen', '>')}, "
            f"is_dna = ({table}.is_dna OR excluded.is_dna), updated_at = excluded.updated_at "
            "RETURNING frequency"
        )
        if connection.vendor == "postgresql":
            returned = copy_rows(
                Entity,
                ENTITY_COLUMNS,
                [tuple(params[i : i + 7]) for i in range(0, len(params), 7)],
                conflict=update,
            )
            self._count_saturated("entities", returned)
            return
        sql = (
            f"INSERT INTO {table} (team_id, name, frequency, first_seen, last_seen, "  # noqa: S608
            f"is_dna, updated_at) VALUES {', '.join(values)} {update}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            self._count_saturated("entities", cursor.fetchall())

    # -- sessions, moods, agents -------------------------------------------------------------

    def _keyed(self, section: str, records: Iterator[tuple[int, Any]]) -> Iterator[list[Any]]:
        batch: dict[str, protocol.KeyedRecord] = {}
        for index, raw in records:
            record = self._validate(section, index, raw)
            if record is None:
                continue
            batch[record.key] = record  # within one batch the last record of a key wins
            if len(batch) >= BATCH:
                yield list(batch.values())
                batch = {}
        if batch:
            yield list(batch.values())

    def _section_l2_sessions(self, records: Iterator[tuple[int, Any]]) -> None:
        for batch in self._keyed("l2_sessions", records):
            keys = [r.key for r in batch]
            existing = set(
                L2Session.objects.filter(team=self.team, key__in=keys).values_list("key", flat=True)
            )
            rows = [
                L2Session(team=self.team, key=r.key, data=r.data, updated_at=self.now)
                for r in batch
                if r.key not in existing
            ]
            L2Session.objects.bulk_create(rows, ignore_conflicts=True)
            self.report.counts["l2_sessions"]["inserted"] += len(rows)

    def _upsert_keyed(self, model: type[MoodState | Agent], section: str, records: Any) -> None:
        for batch in self._keyed(section, records):
            model.objects.bulk_create(
                [model(team=self.team, key=r.key, data=r.data, updated_at=self.now) for r in batch],
                update_conflicts=True,
                unique_fields=["team", "key"],
                update_fields=["data", "updated_at"],
            )
            self.report.counts[section]["upserted"] += len(batch)

    def _section_mood_states(self, records: Iterator[tuple[int, Any]]) -> None:
        self._upsert_keyed(MoodState, "mood_states", records)

    def _section_agents(self, records: Iterator[tuple[int, Any]]) -> None:
        self._upsert_keyed(Agent, "agents", records)

    # -- wrap-up -----------------------------------------------------------------------------

    def _finish_checksum(self, checksum: protocol.StreamingChecksum) -> None:
        utf8, ascii_form = checksum.hexdigests()
        declared = self.manifest.checksum
        if declared is None:
            self.report.warn("the bundle carries no manifest.checksum; nothing was verified")
        elif declared not in (utf8, ascii_form):
            self.report.warn(
                f"checksum mismatch: manifest says {declared}, content hashes to {utf8}; "
                "imported anyway (the protocol says warn, not reject)"
            )

    def _finish_embeddings(self) -> None:
        bundle_model = f"'{self.manifest.embedding_model}' (dim {self.manifest.embedding_dim})"
        team_model = (
            f"'{self.settings.embedding_model}' (dim {self.settings.embedding_dim})"
            if self.settings.is_set
            else "none set"
        )
        if self.embeddings["dropped_option"]:
            self.report.warn(
                f"dropped {self.embeddings['dropped_option']} embeddings because "
                f"keep_embeddings=false (bundle model {bundle_model}, team model {team_model})"
            )
        if self.embeddings["dropped_model"]:
            self.report.warn(
                f"dropped {self.embeddings['dropped_model']} embeddings: bundle model "
                f"{bundle_model} differs from team model {team_model}; send "
                "accept_foreign_embeddings=true to keep them"
            )
        if self.embeddings["foreign_kept"]:
            self.report.warn(
                f"kept {self.embeddings['foreign_kept']} embeddings from bundle model "
                f"{bundle_model} although the team model is {team_model} "
                "(accept_foreign_embeddings=true)"
            )
        if self.adopted:
            self.report.warn(f"this team had no embedding model; adopted {team_model}")
        self.report.embedding_model_match = (
            self.settings.embedding_model,
            self.settings.embedding_dim,
        ) == (self.manifest.embedding_model, self.manifest.embedding_dim)


def _unclaimed(metadata: dict[str, Any]) -> dict[str, Any]:
    """A copy with our provenance key renamed: a bundle cannot claim where a chunk came from."""
    if PROVENANCE_KEY not in metadata:
        return metadata
    copy = {k: v for k, v in metadata.items() if k != PROVENANCE_KEY}
    copy[f"{PROVENANCE_KEY}_claimed"] = metadata[PROVENANCE_KEY]
    return copy


def _saturating_sum(table: str, column: str) -> str:
    """`old + new` capped at COUNTER_MAX without overflowing (both are >= 0): PostgreSQL
    refuses a bigint past it, SQLite would turn the sum into a float."""
    old, new = f"{table}.{column}", f"excluded.{column}"
    return f"CASE WHEN {old} > {COUNTER_MAX} - {new} THEN {COUNTER_MAX} ELSE {old} + {new} END"


def _merge_entity(a: EntityRecord, b: EntityRecord) -> EntityRecord:
    firsts = [d for d in (a.first_seen, b.first_seen) if d is not None]
    lasts = [d for d in (a.last_seen, b.last_seen) if d is not None]
    return EntityRecord(
        name=a.name,
        frequency=min(a.frequency + b.frequency, COUNTER_MAX),
        first_seen=min(firsts) if firsts else None,
        last_seen=max(lasts) if lasts else None,
        is_dna=a.is_dna or b.is_dna,
    )


def _head_of(bundle: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in bundle.items() if k not in SECTIONS}


def _audit_import(
    *, team: Team, actor: Actor, result: dict[str, Any], source: str, size: int | None
) -> None:
    report = result["report"]
    chunks = report["chunks"]
    audit_record(
        actor=actor,
        action="bundle.import",
        team=team,
        target_type="bundles.brain",
        target_id=team.pk,
        summary=(
            f"Imported a bundle ({source}): {chunks['inserted']} chunks inserted, "
            f"{chunks['skipped_duplicate']} duplicates, {chunks['skipped_invalid']} invalid, "
            f"{report['memory_edges']['upserted']} edges, {len(report['warnings'])} warnings"
        ),
        data={"source": source, "size_bytes": size, **result},
    )


@transaction.atomic
def bundle_import(
    *,
    team: Team,
    actor: Actor,
    bundle: Any,
    options: ImportOptions | None = None,
    size: int | None = None,
) -> dict[str, Any]:
    """Import an in-memory bundle. Raises BundleError for an invalid envelope (nothing saved)."""
    envelope = protocol.validate_envelope(bundle)
    importer = _Importer(
        team=team,
        envelope=envelope,
        options=options or ImportOptions(),
        progress=None,
        actor=actor,
    )
    result = importer.run(lambda section: protocol.iter_records(bundle, section), _head_of(bundle))
    _audit_import(team=team, actor=actor, result=result, source="json", size=size)
    _import_event(team=team, job_id=None, result=result)
    return result


# -- files: one streamed pass (formats.memoryai.reader) -------------------------------------------


_ENVELOPE_KEYS = frozenset({"format", "version", "manifest"})


class _HeadAfterSections(Exception):
    """A record section came before format, version or manifest (our own exports put the
    manifest last): the records cannot be read without it, so the head is read first."""


def _top_level(stream: IO[bytes]) -> Iterator[tuple[str, bool, Any]]:
    return BundleFile(stream, frozenset(SECTIONS)).items()


def read_head(stream: IO[bytes]) -> dict[str, Any]:
    """Every top-level value except the record arrays (replaced by [] placeholders)."""
    return {key: [] if is_array else value for key, is_array, value in _top_level(stream)}


def _stream_file(
    path: Path,
    *,
    team: Team,
    actor: Actor,
    options: ImportOptions,
    progress: Progress | None,
    head: dict[str, Any] | None,
) -> dict[str, Any]:
    """The import's one pass over the file; `head` (read beforehand) when it comes last."""
    importer: _Importer | None = None
    read: dict[str, Any] = {}

    def start(envelope_head: dict[str, Any]) -> _Importer:
        return _Importer(
            team=team,
            envelope=protocol.validate_envelope(envelope_head),
            options=options,
            progress=progress,
            actor=actor,
        )

    if head is not None:
        importer = start(head)
    try:
        with path.open("rb") as stream:
            for key, is_array, value in _top_level(stream):
                read[key] = [] if is_array else value
                if not is_array:
                    continue
                if importer is None:
                    if not read.keys() >= _ENVELOPE_KEYS:
                        raise _HeadAfterSections
                    importer = start(read)
                importer.stream_section(key, value)
        if importer is None:
            importer = start(read)
        envelope = protocol.validate_envelope(read)  # keys after the first section included
        return importer.finish_stream(envelope, _head_of(read))
    finally:
        if importer is not None:
            importer.close_spools()


def _spool_line(write: Callable[[bytes], Any], data: bytes) -> None:
    write(data)
    write(b"\n")


@transaction.atomic
def bundle_import_file(
    *,
    team: Team,
    actor: Actor,
    path: Path,
    options: ImportOptions | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Import a bundle file without loading it whole: one pass when format, version and
    manifest come before the record sections; else the head is read first (two passes)."""
    options = options or ImportOptions()
    try:  # raised before anything was written
        result = _stream_file(
            path, team=team, actor=actor, options=options, progress=progress, head=None
        )
    except _HeadAfterSections:
        with path.open("rb") as stream:
            head = read_head(stream)
        result = _stream_file(
            path, team=team, actor=actor, options=options, progress=progress, head=head
        )
    _audit_import(team=team, actor=actor, result=result, source="file", size=path.stat().st_size)
    return result


def import_failure_record(
    *, team: Team, actor: Actor, code: str, message: str, job_id: int | None = None
) -> None:
    """Audit a refused or failed import (its own transaction, after the import rolled back)."""
    with transaction.atomic():
        audit_record(
            actor=actor,
            action="bundle.import_failed",
            team=team,
            target_type="bundles.brain",
            target_id=team.pk,
            summary=f"Bundle import failed: {code}: {message}"[:500],
            data={"code": code, "message": message[:2000]},
        )
        _import_event(team=team, job_id=job_id, error=(code, message))


_OMITTED_WARNINGS = re.compile(r"^(\d+) more warnings were left out")


def _import_event(
    *,
    team: Team,
    job_id: int | None,
    result: dict[str, Any] | None = None,
    error: tuple[str, str] | None = None,
) -> None:
    """`import.finished` for the team's webhooks: the report's numbers, or the error."""
    data: dict[str, Any] = {"job": job_id, "success": error is None}
    if result is not None:
        report = result["report"]
        data["counts"] = {
            name: report[name]
            for name in (*SECTIONS, "proposals")
            if isinstance(report.get(name), dict)
        }
        warnings = list(report["warnings"])
        omitted = _OMITTED_WARNINGS.match(warnings[-1]) if warnings else None
        data["warnings"] = len(warnings) - 1 + int(omitted.group(1)) if omitted else len(warnings)
        data["embedding_model_match"] = report["embedding_model_match"]
    if error is not None:
        data["error"] = {"code": error[0], "message": error[1][:2000]}
    event_emit(team=team, event=webhook_events.IMPORT_FINISHED, data=data)


# -- background jobs -------------------------------------------------------------------------


def scratch_dir() -> Path:
    from django.conf import settings

    folder = Path(settings.DATA_DIR) / "bundle-imports"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def progress_key(job_id: int) -> str:
    return f"bundles:import-job:{job_id}:done"


@transaction.atomic
def import_job_create(
    *,
    team: Team,
    actor: Actor,
    scratch_path: Path,
    size_bytes: int,
    filename: str = "",
    options: ImportOptions | None = None,
) -> ImportJob:
    from bundles.tasks import import_job_run_task

    options = options or ImportOptions()
    job = ImportJob.objects.create(
        team=team,
        created_by=actor.user if getattr(actor.user, "pk", None) else None,
        token=actor.token,
        actor_label=actor.label,
        filename=filename[:255],
        scratch_path=str(scratch_path),
        size_bytes=size_bytes,
        keep_embeddings=options.keep_embeddings,
        accept_foreign_embeddings=options.accept_foreign_embeddings,
        propose_to_id=options.propose_to,
        heartbeat_at=timezone.now(),
    )
    audit_record(
        actor=actor,
        action="bundle.import_queued",
        team=team,
        target=job,
        summary=f"Queued a background import of {size_bytes} bytes",
        data={"size_bytes": size_bytes, "filename": filename},
    )
    # Broker down: the upload still answers with its queued job; the sweeper sends it later.
    transaction.on_commit(lambda: import_job_run_task.delay(job.pk), robust=True)
    return job


class _LeaseLost(Exception):
    """Another runner claimed the job (our lease expired): roll our import back."""


class _Heartbeat:
    """Renew the job's lease from a thread with its own connection while the import runs.

    On SQLite the import holds the only write lock, so a beat may fail; the sweeper's takeover
    needs that lock too, and the job's final state commits with the import, so none is lost."""

    def __init__(self, job_id: int, attempt: int) -> None:
        from django.conf import settings

        self.job_id, self.attempt = job_id, attempt
        self.every = max(0.2, settings.BUNDLE_IMPORT_LEASE_SECONDS / 4)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"import-job-{job_id}", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)

    def _run(self) -> None:
        try:
            while not self.stop.wait(self.every):
                try:
                    ImportJob.objects.filter(
                        pk=self.job_id, attempts=self.attempt, state=JobState.RUNNING
                    ).update(heartbeat_at=timezone.now())
                except DatabaseError:
                    logger.info("import job %s: heartbeat not written", self.job_id)
        finally:
            connection.close()


def _claim(job_id: int, states: list[str]) -> int | None:
    """Compare-and-set: take the job for one more attempt; return that attempt, or None."""
    row = ImportJob.objects.filter(pk=job_id, state__in=states).values("attempts").first()
    if row is None:
        return None
    now = timezone.now()
    claimed = ImportJob.objects.filter(
        pk=job_id, state__in=states, attempts=row["attempts"]
    ).update(state=JobState.RUNNING, started_at=now, heartbeat_at=now, attempts=row["attempts"] + 1)
    return row["attempts"] + 1 if claimed else None


def import_job_run(*, job_id: int, reclaim: bool = False) -> ImportJob | None:
    """Run a queued job once (compare-and-set claim); all-or-nothing, then drop the scratch file.

    `reclaim` also takes a job left "running" by a worker that died (a redelivered task). The
    job's success is committed with the import itself, and only by the attempt that owns it."""
    attempt = _claim(job_id, [JobState.QUEUED, JobState.RUNNING] if reclaim else [JobState.QUEUED])
    if attempt is None:
        return None
    job = ImportJob.objects.select_related("team", "token", "created_by").get(pk=job_id)
    actor = Actor(user=job.created_by, token=job.token)
    path = Path(job.scratch_path)
    key = progress_key(job.pk)
    keep_file = False
    try:
        with _Heartbeat(job.pk, attempt), transaction.atomic():
            result = bundle_import_file(
                team=job.team,
                actor=actor,
                path=path,
                options=ImportOptions(
                    job.keep_embeddings, job.accept_foreign_embeddings, job.propose_to_id
                ),
                progress=lambda done, total: cache.set(key, [done, total], timeout=3600),
            )
            done = sum(
                sum(counts.values())
                for name, counts in result["report"].items()
                if name in SECTIONS
            )
            owned = ImportJob.objects.filter(
                pk=job.pk, attempts=attempt, state=JobState.RUNNING
            ).update(
                state=JobState.SUCCEEDED,
                report=result,
                records_done=done,
                records_total=done,
                finished_at=timezone.now(),
            )
            if not owned:
                raise _LeaseLost
            _import_event(team=job.team, job_id=job.pk, result=result)
    except _LeaseLost:
        logger.warning("import job %s: attempt %s lost its lease; rolled back", job.pk, attempt)
        keep_file = True  # the attempt that owns the job reads it
    except BundleError as exc:
        _job_failed(job, attempt, actor, exc.code, str(exc))
    except Exception as exc:  # stored and shown; the import itself rolled back
        logger.exception("import job %s failed", job.pk)
        _job_failed(job, attempt, actor, "internal-error", f"{type(exc).__name__}: {exc}")
    finally:
        cache.delete(key)
        if not keep_file:
            _remove(path)
    job.refresh_from_db()
    return job


@transaction.atomic
def _job_failed(job: ImportJob, attempt: int, actor: Actor, code: str, message: str) -> None:
    owned = ImportJob.objects.filter(pk=job.pk, attempts=attempt, state=JobState.RUNNING).update(
        state=JobState.FAILED,
        error_code=code,
        error_message=message[:5000],
        finished_at=timezone.now(),
    )
    if owned:
        import_failure_record(team=job.team, actor=actor, code=code, message=message, job_id=job.pk)


MAX_ATTEMPTS = 5  # a job that kills its worker every time fails visibly instead of looping


def import_jobs_sweep(*, now: datetime | None = None) -> list[int]:
    """Send again every job whose lease expired; return their ids.

    A queued job whose task was never sent (broker down at upload time) or was lost is sent
    again; a running job whose worker stopped beating (killed, on any broker) is queued again.
    """
    from django.conf import settings

    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.BUNDLE_IMPORT_LEASE_SECONDS)
    stale = ImportJob.objects.filter(
        state__in=[JobState.QUEUED, JobState.RUNNING], heartbeat_at__lt=cutoff
    ).values_list("pk", flat=True)
    sent = [job_id for job_id in list(stale) if _job_requeue(job_id=job_id, cutoff=cutoff, now=now)]
    scratch_orphans_remove(now=now)
    return sent


def scratch_orphans_remove(*, now: datetime | None = None) -> list[str]:
    """Delete scratch files older than the lease that no queued or running job reads: what a
    request or worker that died between writing a file and handing it on left behind (every
    path that lives on deletes its own). Returns the names removed."""
    from django.conf import settings

    now = now or timezone.now()
    cutoff = (now - timedelta(seconds=settings.BUNDLE_IMPORT_LEASE_SECONDS)).timestamp()
    folder = scratch_dir()
    owned = {
        os.path.realpath(p)
        for p in ImportJob.objects.filter(
            state__in=[JobState.QUEUED, JobState.RUNNING]
        ).values_list("scratch_path", flat=True)
        if p
    }
    removed = []
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                if entry.stat(follow_symlinks=False).st_mtime >= cutoff:
                    continue  # still being written, or about to be handed to a job
                if os.path.realpath(entry.path) in owned:
                    continue
                os.unlink(entry.path)
            except FileNotFoundError:
                continue
            removed.append(entry.name)
    if removed:
        logger.warning("removed %d orphan import scratch files: %s", len(removed), removed[:20])
    return removed


@transaction.atomic
def _job_requeue(*, job_id: int, cutoff: datetime, now: datetime) -> bool:
    from bundles.tasks import import_job_run_task

    job = (
        ImportJob.objects.select_for_update()
        .select_related("team")
        .filter(pk=job_id, state__in=[JobState.QUEUED, JobState.RUNNING], heartbeat_at__lt=cutoff)
        .first()
    )
    if job is None:
        return False
    # Compare-and-set on what was read: SQLite has no row lock, and the job may have just
    # been claimed or finished (its success commits with the import).
    unchanged = ImportJob.objects.filter(
        pk=job.pk, state=job.state, attempts=job.attempts, heartbeat_at__lt=cutoff
    )
    if job.state == JobState.RUNNING and job.attempts >= MAX_ATTEMPTS:
        message = f"the worker stopped during each of {job.attempts} attempts"
        if not unchanged.update(
            state=JobState.FAILED, error_code="worker-lost", error_message=message, finished_at=now
        ):
            return False
        import_failure_record(
            team=job.team, actor=Actor.system(), code="worker-lost", message=message, job_id=job.pk
        )
        return True
    was = job.state
    if not unchanged.update(state=JobState.QUEUED, heartbeat_at=now):
        return False
    audit_record(
        actor=Actor.system(),
        action="bundle.import_requeued",
        team=job.team,
        target=job,
        summary=(
            f"Import #{job.pk} sent to a worker again (it was {was}, no sign of life since "
            f"{cutoff:%Y-%m-%d %H:%M:%S} UTC)"
        ),
        data={"was": was, "attempts": job.attempts},
    )
    transaction.on_commit(lambda: import_job_run_task.delay(job_id), robust=True)
    return True


def _remove(path: Path) -> None:
    try:
        if path.is_relative_to(scratch_dir()):
            os.unlink(path)
    except FileNotFoundError:
        pass


def job_progress(job: ImportJob) -> tuple[int, int]:
    """(records done, records expected) — live from the cache while the job runs."""
    if job.state == JobState.RUNNING:
        value = cache.get(progress_key(job.pk))
        if isinstance(value, list) and len(value) == 2:
            return int(value[0]), int(value[1])
        return 0, 0
    return job.records_done, job.records_total
