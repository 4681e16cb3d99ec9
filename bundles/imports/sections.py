"""The other sections: edges (by the chunk ids the chunks section mapped), entities, and the
keyed records (sessions, moods, agents)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db import connection

from bundles.imports import context
from bundles.imports.context import ImportContext
from bundles.models import Agent, Entity, L2Session, MemoryEdge, MoodState
from formats import memoryai as protocol
from formats.memoryai import EdgeRecord, EntityRecord
from memoryadmin.bulk import copy_rows

# The largest co_activation_count / frequency (BigIntegerField): sums saturate here, warned.
COUNTER_MAX = 2**63 - 1

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

# PostgreSQL: edges and entities are small records, validated, looked up and upserted
# UPSERT_BATCHES chunk batches at a time (10,000 records, a few MB): a 100k re-import makes a
# tenth of the statements and round trips, and the bound keeps its memory flat. SQLite binds
# every value of a batch as a variable (8 an edge): it keeps one chunk batch.
UPSERT_BATCHES = 10


def _upsert_batch() -> int:
    return context.BATCH * (UPSERT_BATCHES if connection.vendor == "postgresql" else 1)


class _CounterWriter:
    """A section whose upsert adds counters: the records that hit COUNTER_MAX are warned."""

    section = ""
    column = ""

    def __init__(self, ctx: ImportContext) -> None:
        self.ctx = ctx
        self.db_datetime = connection.ops.adapt_datetimefield_value
        self.saturated = 0  # records whose counter hit the max

    def _warn_saturated(self) -> None:
        saturated, self.saturated = self.saturated, 0
        if saturated:
            self.ctx.report.warn(
                f"{self.section}: {saturated} records reached the largest {self.column} "
                f"({COUNTER_MAX}); what would have gone past it was not added"
            )

    def _count_saturated(self, values: list[tuple[Any, ...]]) -> None:
        """RETURNING rows (the counter after the upsert): those at the maximum."""
        hits = sum(1 for (value,) in values if value is not None and int(value) >= COUNTER_MAX)
        self.saturated += hits


class EdgeWriter(_CounterWriter):
    section, column = "memory_edges", "co_activation_count"

    def __init__(self, ctx: ImportContext) -> None:
        super().__init__(ctx)
        self.merged: dict[tuple[int, int, str], list[Any]] = {}  # the edges of the next upsert

    def write(self, records: Iterator[tuple[int, Any]]) -> None:
        """Validated a batch at a time, whose chunk ends are looked up together (the id map
        may be a table: `bundles.imports.idmap`)."""
        counts = self.ctx.report.counts["memory_edges"]
        pending: list[tuple[int, EdgeRecord]] = []
        batch = _upsert_batch()
        for index, raw in records:
            record: EdgeRecord | None = self.ctx.validate("memory_edges", index, raw)
            if record is None:
                counts["skipped"] += 1
                continue
            pending.append((index, record))
            if len(pending) >= batch:
                self._merge(pending)
                pending = []
        self._merge(pending)
        if self.merged:
            self._upsert_edges(self.merged)
        self.merged = {}
        self._warn_saturated()

    def _merge(self, pending: list[tuple[int, EdgeRecord]]) -> None:
        ctx = self.ctx
        counts = ctx.report.counts["memory_edges"]
        ids = ctx.chunk_ids.look_up(
            end for _, record in pending for end in (record.chunk_a, record.chunk_b)
        )
        merged = self.merged
        batch = _upsert_batch()
        for index, record in pending:
            source = ids.get(record.chunk_a)
            target = ids.get(record.chunk_b)
            if source is None or target is None:
                counts["skipped"] += 1
                ctx.report.warn(
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
                    record.created_at or ctx.now,
                    record.updated_at or ctx.now,
                ]
            else:  # the same edge twice in one bundle: apply §3.8 within the batch too
                row[0] = max(row[0], record.weight)
                row[1] = min(row[1] + record.co_activation_count, COUNTER_MAX)
            counts["upserted"] += 1
            if len(merged) >= batch:
                self._upsert_edges(merged)
                merged = self.merged = {}

    def _upsert_edges(self, merged: dict[tuple[int, int, str], list[Any]]) -> None:
        team_id, now = self.ctx.team.pk, self.ctx.now
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
                (team_id, source, target, edge_type, weight, count, created, updated)
                for (source, target, edge_type), (weight, count, created, updated) in merged.items()
            ]
            returned = copy_rows(MemoryEdge, EDGE_COLUMNS, rows, conflict=update, params=[now])
            self._count_saturated(returned)
            return
        values, params = [], []
        for (source, target, edge_type), (weight, count, created, updated) in merged.items():
            values.append("(%s, %s, %s, %s, %s, %s, %s, %s)")
            params.extend(
                [
                    team_id,
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
            cursor.execute(sql, [*params, self.db_datetime(now)])
            self._count_saturated(cursor.fetchall())


class EntityWriter(_CounterWriter):
    section, column = "entities", "frequency"

    def write(self, records: Iterator[tuple[int, Any]]) -> None:
        merged: dict[str, EntityRecord] = {}
        batch = _upsert_batch()
        for index, raw in records:
            record: EntityRecord | None = self.ctx.validate("entities", index, raw)
            if record is None:
                continue
            previous = merged.get(record.name)
            merged[record.name] = record if previous is None else _merge_entity(previous, record)
            self.ctx.report.counts["entities"]["upserted"] += 1
            if len(merged) >= batch:
                self._upsert_entities(merged)
                merged = {}
        if merged:
            self._upsert_entities(merged)
        self._warn_saturated()

    def _upsert_entities(self, merged: dict[str, EntityRecord]) -> None:
        table = connection.ops.quote_name(Entity._meta.db_table)
        values, params = [], []
        for record in merged.values():
            values.append("(%s, %s, %s, %s, %s, %s, %s)")
            params.extend(
                [
                    self.ctx.team.pk,
                    record.name,
                    record.frequency,
                    self.db_datetime(record.first_seen),
                    self.db_datetime(record.last_seen),
                    record.is_dna,
                    self.db_datetime(self.ctx.now),
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
            self._count_saturated(returned)
            return
        sql = (
            f"INSERT INTO {table} (team_id, name, frequency, first_seen, last_seen, "  # noqa: S608
            f"is_dna, updated_at) VALUES {', '.join(values)} {update}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            self._count_saturated(cursor.fetchall())


class KeyedWriter:
    """Sessions (inserted once), moods and agents (upserted): records by their key."""

    def __init__(self, ctx: ImportContext) -> None:
        self.ctx = ctx

    def write(self, section: str, records: Iterator[tuple[int, Any]]) -> None:
        if section == "l2_sessions":
            self._insert_sessions(records)
        else:
            self._upsert_keyed(MoodState if section == "mood_states" else Agent, section, records)

    def _keyed(self, section: str, records: Iterator[tuple[int, Any]]) -> Iterator[list[Any]]:
        batch: dict[str, protocol.KeyedRecord] = {}
        for index, raw in records:
            record = self.ctx.validate(section, index, raw)
            if record is None:
                continue
            batch[record.key] = record  # within one batch the last record of a key wins
            if len(batch) >= context.BATCH:
                yield list(batch.values())
                batch = {}
        if batch:
            yield list(batch.values())

    def _insert_sessions(self, records: Iterator[tuple[int, Any]]) -> None:
        team, now = self.ctx.team, self.ctx.now
        for batch in self._keyed("l2_sessions", records):
            keys = [r.key for r in batch]
            existing = set(
                L2Session.objects.filter(team=team, key__in=keys).values_list("key", flat=True)
            )
            rows = [
                L2Session(team=team, key=r.key, data=r.data, updated_at=now)
                for r in batch
                if r.key not in existing
            ]
            L2Session.objects.bulk_create(rows, ignore_conflicts=True)
            self.ctx.report.counts["l2_sessions"]["inserted"] += len(rows)

    def _upsert_keyed(self, model: type[MoodState | Agent], section: str, records: Any) -> None:
        team, now = self.ctx.team, self.ctx.now
        for batch in self._keyed(section, records):
            model.objects.bulk_create(
                [model(team=team, key=r.key, data=r.data, updated_at=now) for r in batch],
                update_conflicts=True,
                unique_fields=["team", "key"],
                update_fields=["data", "updated_at"],
            )
            self.ctx.report.counts[section]["upserted"] += len(batch)


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
