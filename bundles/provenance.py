"""Provenance as it is served: a source record's `retrieved_at` is read where the provenance is
served (the export, agent results), from its source's current snapshot, not stored.

The stored provenance (`Chunk.metadata.memoryadmin`, `ChunkOrigin.metadata`) holds what the
record says and where it comes from. Were the read time stored with it, a changed refresh (a new
snapshot) would rewrite every chunk of the source, and PostgreSQL would regenerate every
row's `search_vector`, when one record changed: ~2 s of PostgreSQL CPU at 10k records. Rows
written before this keep a stored `retrieved_at`; the served one replaces it. See docs/brain.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from bundles.models import ChunkOrigin
from formats import memoryai as protocol
from memoryadmin.models import Team
from sources.models import Source

READ_AT = "retrieved_at"


def without_read_time(provenance: Any) -> Any:
    """The provenance as stored and compared: without a (legacy) read time."""
    if isinstance(provenance, dict) and READ_AT in provenance:
        return {k: v for k, v in provenance.items() if k != READ_AT}
    return provenance


def with_read_time(provenance: Any, read_at: str | None) -> Any:
    """A source provenance as served: with its source's current snapshot's read time."""
    if read_at is None or not isinstance(provenance, dict) or provenance.get("origin") != "source":
        return provenance
    return {**provenance, READ_AT: read_at}


def read_times(team: Team) -> dict[int, str]:
    """source id -> the read time of its current snapshot, for every source of the team (a
    handful of rows: the export reads them once, in its own snapshot)."""
    rows = (
        Source.objects.filter(team=team, current_snapshot__isnull=False)
        .order_by()
        .values_list("pk", "current_snapshot__created_at")
    )
    return {pk: protocol.format_timestamp(created) for pk, created in rows}  # type: ignore[misc]


def time_of(provenance: Any, times: dict[int, str]) -> Any:
    """`with_read_time` with the time looked up in `read_times`' answer."""
    if not isinstance(provenance, dict) or provenance.get("origin") != "source":
        return provenance
    source_id = provenance.get("source_id")
    return with_read_time(provenance, times.get(source_id) if type(source_id) is int else None)


def with_origin_read_at(origins: QuerySet[ChunkOrigin]) -> QuerySet[ChunkOrigin]:
    """Origins annotated `read_at`: their source's current snapshot's read time (None for a
    repository origin); a subquery of the origins' own statement, so no query is added."""
    return origins.annotate(
        source_pk=Cast(KT("metadata__source_id"), IntegerField()),
        read_at=Subquery(
            Source.objects.filter(pk=OuterRef("source_pk"), team_id=OuterRef("team_id")).values(
                "current_snapshot__created_at"
            )[:1]
        ),
    )


def formatted(read_at: datetime | str | None) -> str | None:
    """An annotated `read_at` as the protocol writes it (a JSON subquery returns it as text)."""
    if read_at is None:
        return None
    if isinstance(read_at, str):
        read_at = datetime.fromisoformat(read_at)
    return protocol.format_timestamp(read_at)
