"""The chunks a reconcile works with, as values: the held ones read by hash, the missing ones
COPY-ed in one statement (their ids come back from it), and the owners other groups give them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from django.db import connection, models
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.db.models.expressions import RawSQL

from bundles.mirrored import MirrorResult, Wanted
from bundles.models import Chunk, ChunkOrigin
from memoryadmin.batching import LOOKUP_BATCH, for_batches
from memoryadmin.binary import binary_rows
from memoryadmin.bulk import insert_new, json_loads, stream_rows
from memoryadmin.models import Team


@dataclass(slots=True)
class Held:
    """A chunk as the reconcile compares and rewrites it (read as values)."""

    id: int
    content_hash: str
    memory_type: str
    tags: list[str]
    zone: str
    is_pinned: bool
    metadata: dict[str, Any]
    valid_until: datetime | None
    is_dna: bool
    standalone: bool
    created_at: datetime | None = None  # a reconcile's own time on the chunks it inserted


_HELD_FIELDS = tuple(f.name for f in fields(Held))  # read in the dataclass's order


@dataclass(slots=True)
class HeldOrigin:
    id: int | None
    ref: str
    chunk_id: int
    active: bool
    expires_at: datetime | None
    metadata: Any


def chunks_by_hash(team: Team, hashes: Iterable[str]) -> dict[str, Held]:
    """The team's chunks of these hashes (a reconcile's batch of them: its rows are held)."""
    found: dict[str, Held] = {}
    # PostgreSQL: one statement for a reconcile's batch (the hashes are one array parameter)
    for rows in rows_in(Chunk, hashes, field="content_hash"):
        # order_by(): keep SQLite on the (team, content_hash) unique index.
        values = rows.filter(team=team).order_by().values_list(*_HELD_FIELDS)
        for row in _rows(values):
            found[row[1]] = Held(*row)
    return found


def _rows(values: models.QuerySet) -> Iterable[tuple[Any, ...]]:
    """A bounded look-up's rows as `stream_rows` gives them. PostgreSQL: in one round trip;
    a named cursor's DECLARE, describe, FETCHes and CLOSE were five, each a wait for the swap
    of a streamed refresh to take the GIL back from the read's thread."""
    if connection.vendor != "postgresql":
        return stream_rows(values, itersize=LOOKUP_BATCH, json_loads=json_loads)
    return binary_rows(values, json_loads=json_loads)


# PostgreSQL: values per statement, sent as one array parameter (a withdrawal of a whole
# group is the only list longer than a reconcile's batch; this bounds its statement's text).
ARRAY_BATCH = 20_000


def rows_in(
    model: type[models.Model],
    values: Iterable[Any],
    *,
    field: str = "id",
    most: int | None = None,
) -> Iterator[models.QuerySet]:
    """The model's rows whose `field` is one of `values`, `most` (ARRAY_BATCH) a queryset.
    PostgreSQL: the values are one array parameter (`column_in`, `= ANY(%s)`: `pk__in` made
    Django compile and psycopg adapt a placeholder per value). Elsewhere at most LOOKUP_BATCH
    at a time (SQLite's variable limit)."""
    most = ARRAY_BATCH if most is None else most
    size = most if connection.vendor == "postgresql" else min(most, LOOKUP_BATCH)
    for batch in for_batches(values, size):
        yield model.objects.filter(column_in(model, field, batch))


def column_in(model: type[models.Model], field: str, values: list[str]) -> Any:
    """`field IN values` as a filter. PostgreSQL: `column = ANY(%s)` with the values as one
    array parameter (a 10,000-hash `IN` made Django compile, and psycopg adapt, a placeholder
    per value: a tenth of a cold refresh's mirror). Elsewhere the plain `IN` list."""
    if connection.vendor != "postgresql":
        return Q(**{f"{field}__in": values})
    column = f'"{model._meta.db_table}"."{model._meta.get_field(field).column}"'
    return ExpressionWrapper(
        RawSQL(f"{column} = ANY(%s)", (list(values),)),  # noqa: S611 (names from the model)
        output_field=BooleanField(),
    )


def other_active_refs(group: str, chunk_ids: Iterable[int]) -> dict[int, str]:
    """chunk id -> the smallest active ref of another group (the owner, if smaller than ours)."""
    owners: dict[int, str] = {}
    for origins in rows_in(ChunkOrigin, chunk_ids, field="chunk"):
        rows = origins.filter(active=True).exclude(group=group).values_list("chunk_id", "ref")
        for chunk_id, ref in rows:
            if chunk_id not in owners or ref < owners[chunk_id]:
                owners[chunk_id] = ref
    return owners


_NEW_CHUNK_FIELDS = (
    "team",
    "content",
    "content_hash",
    "memory_type",
    "tags",
    "zone",
    "is_pinned",
    "metadata",
    "valid_until",
    "origin",
    "is_dna",
    "standalone",
    "created_at",
    "updated_at",
)


def chunks_for(
    team: Team,
    kind: str,
    parsed: dict[str, Wanted],
    now: datetime,
    result: MirrorResult,
) -> tuple[dict[str, Held], set[str]]:
    """The chunk of every wanted text by hash, inserting the texts no chunk holds yet (the
    origins need their ids); returns them and the hashes inserted."""
    chunks = chunks_by_hash(team, {w.content_hash for w in parsed.values()})
    missing: dict[str, Wanted] = {}
    for wanted in parsed.values():
        if wanted.content_hash not in chunks:
            missing.setdefault(wanted.content_hash, wanted)
    if not missing:
        return chunks, set()
    rows = [
        (
            team.pk,
            w.item.content,
            digest,
            w.item.memory_type,
            list(w.item.tags),
            w.item.zone,
            w.item.is_pinned,
            w.metadata,
            w.item.expires_at,
            kind,
            w.is_dna,
            False,
            now,
            now,
        )
        for digest, w in missing.items()
    ]
    # the missing texts, straight in; a concurrent import of the same text must not fail this
    inserted = insert_new(
        Chunk, _NEW_CHUNK_FIELDS, rows, key="content_hash", batch_size=LOOKUP_BATCH
    )
    result.chunks_created += len(missing)
    for pk, digest in inserted:
        w = missing[digest]
        chunks[digest] = Held(
            id=pk,
            content_hash=digest,
            memory_type=w.item.memory_type,
            tags=list(w.item.tags),
            zone=w.item.zone,
            is_pinned=w.item.is_pinned,
            metadata=w.metadata,
            valid_until=w.item.expires_at,
            is_dna=w.is_dna,
            standalone=False,
            created_at=now,
        )
    # Elsewhere than PostgreSQL nothing is returned; a concurrent insert is not returned either
    unseen = [digest for digest in missing if digest not in chunks]
    if unseen:
        chunks.update(chunks_by_hash(team, unseen))
    return chunks, set(missing)
