"""Provenance as it is served: a source record's `retrieved_at` and `stale` are read where the
provenance is served (the export, agent results, the Brain page), from its source, not stored.

The stored provenance (`Chunk.metadata.memoryadmin`, `ChunkOrigin.metadata`) holds what the
record says and where it comes from. Were the read time or the source's staleness stored with
it, a changed refresh (a new snapshot) or a source going stale or fresh again would rewrite
every chunk of the source, and PostgreSQL would regenerate every row's `search_vector`, for
one record or for a flag: ~2 s of PostgreSQL CPU at 10k records. Rows written before this may
keep a stored `retrieved_at` (migration 0014 removed a stored `stale`); the served values
replace both. See docs/brain.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import Exists, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from bundles.models import ChunkOrigin
from formats import memoryai as protocol
from memoryadmin.models import Team
from sources.models import Health, Source

READ_AT = "retrieved_at"
STALE = "stale"
SERVED_KEYS = frozenset((READ_AT, STALE))


class SourceNow(NamedTuple):
    """What a source provenance is served with: its current snapshot's read time (None
    without one) and whether the source is stale."""

    read_at: str | None
    stale: bool


GONE = SourceNow(None, False)  # a source that no longer exists: no read time, not stale


def without_served(provenance: Any) -> Any:
    """The provenance as stored and compared: without the served keys (a legacy row's)."""
    if isinstance(provenance, dict) and not SERVED_KEYS.isdisjoint(provenance):
        return {k: v for k, v in provenance.items() if k not in SERVED_KEYS}
    return provenance


def served(provenance: Any, now: SourceNow) -> Any:
    """A source provenance as served: `stale` (always) and `retrieved_at` (when the source has
    a current snapshot) from the source as it is now; a stored value of either is replaced."""
    if not isinstance(provenance, dict) or provenance.get("origin") != "source":
        return provenance
    found = {**provenance, STALE: now.stale}
    if now.read_at is not None:
        found[READ_AT] = now.read_at
    return found


def source_states(team: Team) -> dict[int, SourceNow]:
    """source id -> its `SourceNow`, for every source of the team (a handful of rows: the
    export reads them once, in its own snapshot)."""
    rows = (
        Source.objects.filter(team=team)
        .order_by()
        .values_list("pk", "current_snapshot__created_at", "health")
    )
    return {
        pk: SourceNow(
            protocol.format_timestamp(created) if created is not None else None,
            health == Health.STALE,
        )
        for pk, created, health in rows
    }


def served_from(provenance: Any, states: dict[int, SourceNow]) -> Any:
    """`served` with the source looked up in `source_states`' answer."""
    if not isinstance(provenance, dict) or provenance.get("origin") != "source":
        return provenance
    source_id = provenance.get("source_id")
    return served(provenance, states.get(source_id, GONE) if type(source_id) is int else GONE)


def with_origin_source(origins: QuerySet[ChunkOrigin]) -> QuerySet[ChunkOrigin]:
    """Origins annotated with their source as it is now (None / False for a repository
    origin): `read_at`, its current snapshot's read time, and `source_stale`. Subqueries of
    the origins' own statement, so no query is added."""
    source = Source.objects.filter(pk=OuterRef("source_pk"), team_id=OuterRef("team_id"))
    return origins.annotate(
        source_pk=Cast(KT("metadata__source_id"), IntegerField()),
        read_at=Subquery(source.values("current_snapshot__created_at")[:1]),
        source_stale=Exists(source.filter(health=Health.STALE)),
    )


def origin_now(origin: ChunkOrigin) -> SourceNow:
    """The `SourceNow` an origin annotated by `with_origin_source` carries."""
    return SourceNow(
        formatted(getattr(origin, "read_at", None)), bool(getattr(origin, "source_stale", False))
    )


def formatted(read_at: datetime | str | None) -> str | None:
    """An annotated `read_at` as the protocol writes it (a JSON subquery returns it as text)."""
    if read_at is None:
        return None
    if isinstance(read_at, str):
        read_at = datetime.fromisoformat(read_at)
    return protocol.format_timestamp(read_at)
