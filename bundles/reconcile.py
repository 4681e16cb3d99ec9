"""The brain's reconcile: upsert a wanted set as chunks and origins, deactivate the rest.

Runs inside the caller's transaction (`bundles.mirror.brain_mirror_*`), so the brain never
disagrees with the source or review state. See docs/brain.md.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef
from django.utils import timezone

from bundles.mirrored import PROVENANCE_KEY, Mirrored, MirrorResult
from bundles.models import Chunk, ChunkOrigin
from formats import memoryai as protocol
from memoryadmin.audit import Actor, audit_record
from memoryadmin.batching import LOOKUP_BATCH, for_batches
from memoryadmin.bulk import bulk_insert
from memoryadmin.models import Team

logger = logging.getLogger(__name__)


_CHUNK_FIELDS = (
    "id",
    "content_hash",
    "memory_type",
    "tags",
    "zone",
    "is_pinned",
    "metadata",
    "valid_until",
    "is_dna",
    "standalone",
)


def _chunks_by_hash(team: Team, hashes: Iterable[str]) -> dict[str, Chunk]:
    hashes = list(hashes)
    found: dict[str, Chunk] = {}
    for batch in for_batches(hashes):
        # order_by(): keep SQLite on the (team, content_hash) unique index.
        for chunk in (
            Chunk.objects.filter(team=team, content_hash__in=batch).order_by().only(*_CHUNK_FIELDS)
        ):
            found[chunk.content_hash] = chunk
    return found


def _other_active_refs(group: str, chunk_ids: Iterable[int]) -> dict[int, str]:
    """chunk id -> the smallest active ref of another group (the owner, if smaller than ours)."""
    ids = list(chunk_ids)
    owners: dict[int, str] = {}
    for batch in for_batches(ids):
        rows = (
            ChunkOrigin.objects.filter(chunk_id__in=batch, active=True)
            .exclude(group=group)
            .values_list("chunk_id", "ref")
        )
        for chunk_id, ref in rows:
            if chunk_id not in owners or ref < owners[chunk_id]:
                owners[chunk_id] = ref
    return owners


def _without_time(provenance: Any) -> Any:
    if isinstance(provenance, dict):
        return {k: v for k, v in provenance.items() if k != "retrieved_at"}
    return provenance


def _reconcile(
    *,
    team: Team,
    group: str,
    kind: str,
    wanted: list[Mirrored],
    actor: Actor,
    label: str,
) -> MirrorResult:
    now = timezone.now()
    result = MirrorResult()
    parsed = _parse(group, wanted, result)
    chunks, missing = _chunks_for(team, kind, parsed, now, result)
    plan = _plan(
        team=team, group=group, kind=kind, parsed=parsed, chunks=chunks, missing=missing, now=now
    )
    _apply(plan, now, result)
    if result.changed:
        audit_record(
            actor=actor,
            action="brain.mirror",
            team=team,
            target_type="bundles.brain",
            target_id=team.pk,
            summary=(
                f"Mirrored {label} into the brain: {len(parsed)} served, "
                f"{result.chunks_created} new chunks, {result.activated} returned, "
                f"{result.deactivated} withdrawn"
            ),
            data={"group": group, **result.as_dict()},
        )
    return result


def _parse(
    group: str, wanted: list[Mirrored], result: MirrorResult
) -> dict[str, tuple[Mirrored, protocol.ChunkRecord]]:
    """ref -> (wanted item, its chunk record); items the format refuses are skipped."""
    parsed: dict[str, tuple[Mirrored, protocol.ChunkRecord]] = {}
    for item in wanted:
        try:
            record = protocol.validate_chunk(
                {
                    "content": item.content,
                    "memory_type": item.memory_type,
                    "tags": item.tags,
                    "zone": item.zone,
                    "is_pinned": item.is_pinned,
                    "metadata": {PROVENANCE_KEY: item.provenance},
                },
                embedding_dim=0,
                path=item.ref,
            )
        except protocol.BundleError as exc:
            result.skipped.append(f"{item.ref}: {exc.code}")
            logger.warning("mirror %s skipped %s: %s", group, item.ref, exc)
            continue
        parsed[item.ref] = (item, record)
    return parsed


def _chunks_for(
    team: Team,
    kind: str,
    parsed: dict[str, tuple[Mirrored, protocol.ChunkRecord]],
    now: datetime,
    result: MirrorResult,
) -> tuple[dict[str, Chunk], dict[str, tuple[Mirrored, protocol.ChunkRecord]]]:
    """The chunk of every wanted text by hash, inserting the texts no chunk holds yet (the
    origins need their ids); returns them and the inserted ones."""
    chunks = _chunks_by_hash(team, {record.content_hash for _, record in parsed.values()})
    missing: dict[str, tuple[Mirrored, protocol.ChunkRecord]] = {}
    for item, record in parsed.values():
        if record.content_hash not in chunks:
            missing.setdefault(record.content_hash, (item, record))
    if missing:
        bulk_insert(
            Chunk,
            [
                Chunk(
                    team=team,
                    content=record.content,
                    content_hash=digest,
                    memory_type=record.memory_type,
                    tags=record.tags,
                    zone=record.zone,
                    is_pinned=record.is_pinned,
                    metadata=record.metadata,
                    valid_until=item.expires_at,
                    origin=kind,
                    is_dna=record.is_dna,
                    standalone=False,
                    created_at=now,
                    updated_at=now,
                )
                for digest, (item, record) in missing.items()
            ],
            batch_size=LOOKUP_BATCH,
            ignore_conflicts=True,  # a concurrent import of the same text must not fail this
        )
        result.chunks_created = len(missing)
        chunks.update(_chunks_by_hash(team, missing))
    return chunks, missing


@dataclass
class _Plan:
    """What one reconcile changes, worked out before any of it is written."""

    chunks: dict[str, Chunk]
    missing: dict[str, tuple[Mirrored, protocol.ChunkRecord]] = field(default_factory=dict)
    left: dict[int, str] = field(default_factory=dict)  # chunk id -> the ref that left it
    chunk_updates: dict[int, Chunk] = field(default_factory=dict)
    bump: set[int] = field(default_factory=set)
    gained: set[int] = field(default_factory=set)  # an origin (re)activates: not withdrawn
    new_origins: list[ChunkOrigin] = field(default_factory=list)
    origin_updates: list[ChunkOrigin] = field(default_factory=list)
    activated: int = 0
    deactivated: int = 0
    unchanged: int = 0


def _plan(
    *,
    team: Team,
    group: str,
    kind: str,
    parsed: dict[str, tuple[Mirrored, protocol.ChunkRecord]],
    chunks: dict[str, Chunk],
    missing: dict[str, tuple[Mirrored, protocol.ChunkRecord]],
    now: datetime,
) -> _Plan:
    """Which origins to create, move or deactivate and which chunks to rewrite (reads only)."""
    plan = _Plan(chunks=chunks, missing=missing)
    origins = {o.ref: o for o in ChunkOrigin.objects.filter(team=team, group=group)}
    owners = _other_active_refs(group, [c.pk for c in chunks.values()])
    # Chunks an origin leaves (withdrawn, or its text changed): standalone ones drop our
    # provenance key, so an imported text does not keep claiming an approval that is gone.
    for ref, origin in origins.items():
        if not origin.active:
            continue
        if ref not in parsed or origin.chunk_id != chunks[parsed[ref][1].content_hash].pk:
            plan.left[origin.chunk_id] = ref
    for ref, (item, record) in parsed.items():
        chunk = chunks[record.content_hash]
        if record.content_hash not in missing and chunk.pk not in plan.chunk_updates:
            _refresh_chunk(chunk, ref, item, record, owners, plan.chunk_updates, plan.bump)
        origin = origins.get(ref)
        if origin is None:
            plan.new_origins.append(
                ChunkOrigin(
                    team=team,
                    chunk=chunk,
                    kind=kind,
                    group=group,
                    ref=ref,
                    active=True,
                    expires_at=item.expires_at,
                    metadata=item.provenance,
                    updated_at=now,
                )
            )
            plan.bump.add(chunk.pk)
            plan.gained.add(chunk.pk)
            continue
        moved = origin.chunk_id != chunk.pk or not origin.active
        if moved:
            plan.bump.add(chunk.pk)
            plan.gained.add(chunk.pk)
            plan.activated += 1
        if moved or origin.expires_at != item.expires_at or origin.metadata != item.provenance:
            origin.chunk_id, origin.active = chunk.pk, True
            origin.expires_at, origin.metadata, origin.updated_at = (
                item.expires_at,
                item.provenance,
                now,
            )
            plan.origin_updates.append(origin)
        else:
            plan.unchanged += 1
    for ref, origin in origins.items():
        if ref not in parsed and origin.active:
            origin.active, origin.updated_at = False, now
            plan.origin_updates.append(origin)
            plan.deactivated += 1
    return plan


def _apply(plan: _Plan, now: datetime, result: MirrorResult) -> None:
    """The plan's bulk writes, then the withdrawn marks and the `since` bumps."""
    bulk_insert(ChunkOrigin, plan.new_origins, batch_size=LOOKUP_BATCH)
    result.origins_created = len(plan.new_origins)
    result.activated, result.deactivated = plan.activated, plan.deactivated
    result.unchanged = plan.unchanged
    if plan.origin_updates:
        ChunkOrigin.objects.bulk_update(
            plan.origin_updates,
            ["chunk", "active", "expires_at", "metadata", "updated_at"],
            batch_size=LOOKUP_BATCH,
        )
    if plan.chunk_updates:
        Chunk.objects.bulk_update(
            list(plan.chunk_updates.values()),
            ["memory_type", "tags", "zone", "is_pinned", "metadata", "valid_until", "is_dna"],
            batch_size=LOOKUP_BATCH,
        )
        result.chunks_updated = len(plan.chunk_updates)
    _drop_provenance(plan.left, keep=set(plan.chunk_updates), now=now)
    created_ids = {plan.chunks[digest].pk for digest in plan.missing}
    _mark_withdrawn(left=set(plan.left) - plan.gained, back=plan.gained - created_ids, now=now)
    bump = plan.bump - created_ids
    if bump:
        ids = sorted(bump)
        for batch in for_batches(ids):
            Chunk.objects.filter(pk__in=batch).update(updated_at=now)


def _refresh_chunk(
    chunk: Chunk,
    ref: str,
    item: Mirrored,
    record: protocol.ChunkRecord,
    owners: dict[int, str],
    updates: dict[int, Chunk],
    bump: set[int],
) -> None:
    """Rewrite an existing chunk's mirrored fields when this ref owns it.

    Standalone (imported) chunks keep their own fields and only gain the provenance key; among
    mirror origins the smallest active ref owns the chunk, so two sources with the same text
    do not take turns.
    """
    other = owners.get(chunk.pk)
    if other is not None and other < ref:
        return
    if chunk.standalone:
        if chunk.metadata.get(PROVENANCE_KEY) != item.provenance:
            chunk.metadata = {**chunk.metadata, PROVENANCE_KEY: item.provenance}
            updates[chunk.pk] = chunk
            bump.add(chunk.pk)
        return
    values = {
        "memory_type": record.memory_type,
        "tags": record.tags,
        "zone": record.zone,
        "is_pinned": record.is_pinned,
        "metadata": record.metadata,
        "valid_until": item.expires_at,
    }
    current = {name: getattr(chunk, name) for name in values}
    if current == values:
        return
    only_time = {k: v for k, v in current.items() if k != "metadata"} == {
        k: v for k, v in values.items() if k != "metadata"
    } and _without_time(chunk.metadata.get(PROVENANCE_KEY)) == _without_time(item.provenance)
    for name, value in values.items():
        setattr(chunk, name, value)
    chunk.is_dna = chunk.is_dna or record.is_dna  # DNA is sticky
    updates[chunk.pk] = chunk
    if not only_time:  # a new retrieval time alone is not a change for `since` exports
        bump.add(chunk.pk)


def _mark_withdrawn(*, left: set[int], back: set[int], now: datetime) -> None:
    """Keep `Chunk.withdrawn_at` true: set when a mirror-only chunk loses its last active
    origin, cleared when one comes back (bundles.services.prune deletes after retention)."""
    ids = sorted(back)
    for batch in for_batches(ids):
        Chunk.objects.filter(pk__in=batch, withdrawn_at__isnull=False).update(withdrawn_at=None)
    ids = sorted(left)
    for batch in for_batches(ids):
        Chunk.objects.filter(pk__in=batch, standalone=False, withdrawn_at__isnull=True).exclude(
            Exists(ChunkOrigin.objects.filter(chunk_id=OuterRef("pk"), active=True))
        ).update(withdrawn_at=now)


def _drop_provenance(left: dict[int, str], *, keep: set[int], now: datetime) -> None:
    ids = [pk for pk in left if pk not in keep]
    for batch in for_batches(ids):
        for chunk in Chunk.objects.filter(pk__in=batch, standalone=True).only("id", "metadata"):
            mine = chunk.metadata.get(PROVENANCE_KEY)
            if isinstance(mine, dict) and mine.get("ref") == left[chunk.pk]:
                chunk.metadata = {k: v for k, v in chunk.metadata.items() if k != PROVENANCE_KEY}
                Chunk.objects.filter(pk=chunk.pk).update(metadata=chunk.metadata, updated_at=now)
