"""The brain's reconcile: upsert a wanted set as chunks and origins, deactivate the rest.

Runs inside the caller's transaction (`bundles.mirror.brain_mirror_*`), so the brain never
disagrees with the source or review state. See docs/brain.md.

It works on plain values, not model instances: the held chunks and origins are read as tuples,
new ones are COPY-ed (one statement per table), changed ones are set by one UPDATE … FROM a
COPY-ed scratch table (`memoryadmin.bulk`). A cold refresh of 10,000 records spent most of its
mirror time building and preparing Chunk and ChunkOrigin instances.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Exists, OuterRef
from django.utils import timezone

from bundles.mirror_chunks import Held, HeldOrigin, chunks_for, other_active_refs, rows_in
from bundles.mirrored import PROVENANCE_KEY, Mirrored, MirrorResult, Wanted, parse_wanted
from bundles.models import Chunk, ChunkOrigin
from bundles.provenance import without_served
from memoryadmin.audit import Actor, audit_record
from memoryadmin.batching import LOOKUP_BATCH, for_batches
from memoryadmin.bulk import insert_values, json_loads, stream_rows, update_values
from memoryadmin.models import Team

# Wanted items reconciled at a time: what one reconcile holds in memory (items, chunks, origins)
# is bounded by this, not by the size of the source or repository.
MIRROR_BATCH = 2000


@dataclass
class _Run:
    """What one reconcile carries from batch to batch: held chunks it rewrote (a later ref with
    the same text does not rewrite them again, as within one batch) and held origins it kept
    as they were (neither is grown by a cold run, where every chunk and origin is new)."""

    now: datetime
    rewritten: set[int] = field(default_factory=set)
    kept: set[int] = field(default_factory=set)
    held_origins: bool = True  # the group had origins before this run
    served: int = 0


def _reconcile(
    *,
    team: Team,
    group: str,
    kind: str,
    wanted: Iterable[Mirrored],
    actor: Actor,
    label: str,
) -> MirrorResult:
    """`wanted` is read once, in order, MIRROR_BATCH items at a time: each batch is planned and
    written before the next is read; then the group's origins no batch wanted are withdrawn.
    Refs are unique; in ref order a shared text is handled as in one batch (the first ref to
    insert or rewrite its chunk keeps it for the run: `Chunk.created_at` is the run's time for
    the chunks this run inserted, `_Run.rewritten` holds the held ones it rewrote)."""
    now = timezone.now()
    result = MirrorResult()
    run = _Run(now=now)
    run.held_origins = ChunkOrigin.objects.filter(team=team, group=group).exists()
    items = iter(wanted)
    try:
        for batch in for_batches(items, MIRROR_BATCH):
            parsed = parse_wanted(group, batch, result)
            del batch
            if not parsed:
                continue
            run.served += len(parsed)
            chunks, created = chunks_for(team, kind, parsed, now, result)
            plan = _plan(
                team=team, group=group, parsed=parsed, chunks=chunks, created=created, run=run
            )
            _apply(plan, team=team, group=group, kind=kind, now=now, result=result)
            run.rewritten.update(plan.chunk_updates)
            del parsed, chunks, plan
    finally:
        close = getattr(items, "close", None)
        if close is not None:  # a generator reading rows: end its read now, not at GC
            close()
    if run.held_origins:
        _withdraw_rest(team=team, group=group, run=run, result=result)
    if result.changed:
        audit_record(
            actor=actor,
            action="brain.mirror",
            team=team,
            target_type="bundles.brain",
            target_id=team.pk,
            summary=(
                f"Mirrored {label} into the brain: {run.served} served, "
                f"{result.chunks_created} new chunks, {result.activated} returned, "
                f"{result.deactivated} withdrawn"
            ),
            data={"group": group, **result.as_dict()},
        )
    return result


def _withdraw_rest(*, team: Team, group: str, run: _Run, result: MirrorResult) -> None:
    """Deactivate the group's active origins that no batch wanted: the ones this run neither
    wrote (their `updated_at` is the run's time) nor kept as they were."""
    rows = (
        ChunkOrigin.objects.filter(team=team, group=group, active=True)
        .exclude(updated_at=run.now)
        .order_by()
        .values_list("id", "ref", "chunk_id")
    )
    gone = [row for row in stream_rows(rows, itersize=LOOKUP_BATCH) if row[0] not in run.kept]
    if not gone:
        return
    for rows in rows_in(ChunkOrigin, [row[0] for row in gone]):
        rows.update(active=False, updated_at=run.now)
    result.deactivated += len(gone)
    left = {chunk_id: ref for _, ref, chunk_id in gone}
    _drop_provenance(left, keep=run.rewritten, now=run.now)
    _mark_withdrawn(left=set(left), back=set(), now=run.now)


# ----------------------------------------------------------------------------- planning


@dataclass
class _Plan:
    """What one reconcile changes, worked out before any of it is written."""

    chunks: dict[str, Held]
    created: set[str] = field(default_factory=set)  # hashes of the chunks this run inserted
    left: dict[int, str] = field(default_factory=dict)  # chunk id -> the ref that left it
    chunk_updates: dict[int, Held] = field(default_factory=dict)
    bump: set[int] = field(default_factory=set)
    gained: set[int] = field(default_factory=set)  # an origin (re)activates: not withdrawn
    new_origins: list[HeldOrigin] = field(default_factory=list)
    origin_updates: list[HeldOrigin] = field(default_factory=list)
    activated: int = 0
    deactivated: int = 0
    unchanged: int = 0


def _origins(team: Team, group: str, refs: list[str]) -> dict[str, HeldOrigin]:
    """The group's origins of these refs."""
    found: dict[str, HeldOrigin] = {}
    for rows in rows_in(ChunkOrigin, refs, field="ref"):
        values = (
            rows.filter(team=team, group=group)
            .order_by()
            .values_list("id", "ref", "chunk_id", "active", "expires_at", "metadata")
        )
        for row in stream_rows(values, itersize=LOOKUP_BATCH, json_loads=json_loads):
            found[row[1]] = HeldOrigin(*row)
    return found


def _plan(
    *,
    team: Team,
    group: str,
    parsed: dict[str, Wanted],
    chunks: dict[str, Held],
    created: set[str],
    run: _Run,
) -> _Plan:
    """Which of one batch's origins to create, move or reactivate and which chunks to rewrite
    (reads only)."""
    # The chunks an earlier batch of this run inserted count as inserted here too
    created = created | {d for d, c in chunks.items() if c.created_at == run.now}
    plan = _Plan(chunks=chunks, created=created)
    origins = _origins(team, group, list(parsed)) if run.held_origins else {}
    # Held chunks a ref of this batch would rewrite: only their owners are looked up (a chunk
    # this transaction inserted has no other origin yet; one that matches is not rewritten).
    rewrite = {
        chunk.id
        for wanted in parsed.values()
        if wanted.content_hash not in created
        and (chunk := chunks[wanted.content_hash]).id not in run.rewritten
        and _differs(chunk, wanted)
    }
    owners = other_active_refs(group, rewrite) if rewrite else {}
    # Chunks an origin leaves (withdrawn, or its text changed): standalone ones drop our
    # provenance key, so an imported text does not keep claiming an approval that is gone.
    for ref, origin in origins.items():
        if not origin.active:
            continue
        if ref not in parsed or origin.chunk_id != chunks[parsed[ref].content_hash].id:
            plan.left[origin.chunk_id] = ref
    for ref, wanted in parsed.items():
        item = wanted.item
        chunk = chunks[wanted.content_hash]
        if chunk.id in rewrite and chunk.id not in plan.chunk_updates:
            _refresh_chunk(chunk, ref, wanted, owners, plan.chunk_updates, plan.bump)
        origin = origins.get(ref)
        if origin is None:
            plan.new_origins.append(
                HeldOrigin(None, ref, chunk.id, True, item.expires_at, item.provenance)
            )
            plan.bump.add(chunk.id)
            plan.gained.add(chunk.id)
            continue
        moved = origin.chunk_id != chunk.id or not origin.active
        if moved:
            plan.bump.add(chunk.id)
            plan.gained.add(chunk.id)
            plan.activated += 1
        if (
            moved
            or origin.expires_at != item.expires_at
            or without_served(origin.metadata) != item.provenance
        ):
            origin.chunk_id, origin.active = chunk.id, True
            origin.expires_at, origin.metadata = item.expires_at, item.provenance
            plan.origin_updates.append(origin)
        else:
            plan.unchanged += 1
            run.kept.add(origin.id)  # type: ignore[arg-type]
    return plan


def _differs(chunk: Held, wanted: Wanted) -> bool:
    """Whether the wanted item would change the chunk's mirrored fields (a standalone chunk's:
    only our provenance key). A read time or staleness stored by an earlier version is not
    a change."""
    item = wanted.item
    mine = without_served(chunk.metadata.get(PROVENANCE_KEY))
    if chunk.standalone:
        return mine != item.provenance
    return (
        chunk.memory_type != item.memory_type
        or chunk.tags != list(item.tags)
        or chunk.zone != item.zone
        or chunk.is_pinned != item.is_pinned
        or chunk.valid_until != item.expires_at
        or chunk.metadata.keys() != wanted.metadata.keys()
        or mine != item.provenance
    )


def _refresh_chunk(
    chunk: Held,
    ref: str,
    wanted: Wanted,
    owners: dict[int, str],
    updates: dict[int, Held],
    bump: set[int],
) -> None:
    """Rewrite an existing chunk's mirrored fields when this ref owns it and they differ.

    Standalone (imported) chunks keep their own fields and only gain the provenance key; among
    mirror origins the smallest active ref owns the chunk, so two sources with the same text
    do not take turns.
    """
    other = owners.get(chunk.id)
    if (other is not None and other < ref) or not _differs(chunk, wanted):
        return
    item = wanted.item
    if chunk.standalone:
        chunk.metadata = {**chunk.metadata, PROVENANCE_KEY: item.provenance}
    else:
        chunk.memory_type, chunk.tags, chunk.zone = item.memory_type, list(item.tags), item.zone
        chunk.is_pinned, chunk.valid_until = item.is_pinned, item.expires_at
        chunk.metadata = wanted.metadata
        chunk.is_dna = chunk.is_dna or wanted.is_dna  # DNA is sticky
    updates[chunk.id] = chunk
    bump.add(chunk.id)


# ----------------------------------------------------------------------------- writing


_ORIGIN_FIELDS = (
    "team",
    "chunk",
    "kind",
    "group",
    "ref",
    "active",
    "expires_at",
    "metadata",
    "updated_at",
)
_ORIGIN_UPDATES = ("chunk", "active", "expires_at", "metadata", "updated_at")
_CHUNK_UPDATES = ("memory_type", "tags", "zone", "is_pinned", "metadata", "valid_until", "is_dna")


def _apply(
    plan: _Plan, *, team: Team, group: str, kind: str, now: datetime, result: MirrorResult
) -> None:
    """The plan's writes (one COPY or UPDATE per table), then the withdrawn marks and the
    `since` bumps."""
    insert_values(
        ChunkOrigin,
        _ORIGIN_FIELDS,
        (
            (team.pk, o.chunk_id, kind, group, o.ref, True, o.expires_at, o.metadata, now)
            for o in plan.new_origins
        ),
        batch_size=LOOKUP_BATCH,
    )
    result.origins_created += len(plan.new_origins)
    result.activated += plan.activated
    result.deactivated += plan.deactivated
    result.unchanged += plan.unchanged
    update_values(
        ChunkOrigin,
        _ORIGIN_UPDATES,
        ((o.id, o.chunk_id, o.active, o.expires_at, o.metadata, now) for o in plan.origin_updates),
        batch_size=LOOKUP_BATCH,
    )
    if plan.chunk_updates:
        update_values(
            Chunk,
            _CHUNK_UPDATES,
            (
                (c.id, *(getattr(c, name) for name in _CHUNK_UPDATES))
                for c in plan.chunk_updates.values()
            ),
            batch_size=LOOKUP_BATCH,
        )
        result.chunks_updated += len(plan.chunk_updates)
    _drop_provenance(plan.left, keep=set(plan.chunk_updates), now=now)
    created_ids = {plan.chunks[digest].id for digest in plan.created}
    _mark_withdrawn(left=set(plan.left) - plan.gained, back=plan.gained - created_ids, now=now)
    bump = plan.bump - created_ids
    for rows in rows_in(Chunk, sorted(bump)):
        rows.update(updated_at=now)


def _mark_withdrawn(*, left: set[int], back: set[int], now: datetime) -> None:
    """Keep `Chunk.withdrawn_at` true: set when a mirror-only chunk loses its last active
    origin, cleared when one comes back (bundles.services.prune deletes after retention)."""
    for rows in rows_in(Chunk, sorted(back)):
        rows.filter(withdrawn_at__isnull=False).update(withdrawn_at=None)
    for rows in rows_in(Chunk, sorted(left)):
        rows.filter(standalone=False, withdrawn_at__isnull=True).exclude(
            Exists(ChunkOrigin.objects.filter(chunk_id=OuterRef("pk"), active=True))
        ).update(withdrawn_at=now)


def _drop_provenance(left: dict[int, str], *, keep: set[int], now: datetime) -> None:
    ids = [pk for pk in left if pk not in keep]
    for rows in rows_in(Chunk, ids, most=MIRROR_BATCH):  # the rows are read whole: bounded
        for pk, metadata in rows.filter(standalone=True).values_list("id", "metadata"):
            mine = metadata.get(PROVENANCE_KEY)
            if isinstance(mine, dict) and mine.get("ref") == left[pk]:
                kept = {k: v for k, v in metadata.items() if k != PROVENANCE_KEY}
                Chunk.objects.filter(pk=pk).update(metadata=kept, updated_at=now)
