"""One team memory: approved source records and active repository memories, mirrored as chunks.

Each mirrored thing is a `ChunkOrigin` (ref `source:<id>:<record id>` or
`repository:<id>:<memory id>`) pointing at the chunk that holds its current text. A chunk is
*served* (exported, counted) when it is not user-deleted and either stands on its own (imported
or entered) or has an active, unexpired origin. Reconciling a source or a repository computes
the wanted set, upserts it and deactivates the rest, inside the caller's transaction, so the
brain never disagrees with the source or review state. See docs/brain.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import connection, transaction
from django.db.models import F
from django.db.models.functions import Collate
from django.utils import timezone

from bundles.embeddings.queueing import brain_embed_queue
from bundles.embeddings.similar import proposal_vectors_pending
from bundles.mirrored import Mirrored, MirrorResult
from bundles.models import OriginKind
from bundles.reconcile import _reconcile
from formats import memoryai as protocol
from formats.crosswalk import MEMORY_TYPES, SOURCE_TYPES, chunk_content, memory_content
from memoryadmin.audit import Actor
from memoryadmin.bulk import json_loads, stream_rows
from reviews.selectors import (
    memory_pinned,
    memory_provenance,
    memory_tags,
    repository_approvals,
)
from reviews.signals import IndexedMemory

if TYPE_CHECKING:
    from reviews.models import Repository
    from sources.models import Source


# ----------------------------------------------------------------------------- desired sets


# What a source record contributes to its chunk, as a plain tuple (the refresh hands over
# the records it just read; others read them from the current snapshot).
SourceRow = tuple[str, str, str, str, "list[str] | tuple[str, ...]", "datetime | None"]
SOURCE_ROW_FIELDS = ("record_id", "kind", "title", "body", "tags", "expires")


# Records read back per query: the mirror reconciles them in batches of its own size.
READ_BATCH = 2000


def _stored_rows(source: Source, now: datetime | None) -> Iterator[SourceRow]:
    """The current snapshot's active records in record id order, one bounded query at a time
    (keyset: after the last id read), so no read stays open while the mirror writes."""
    from sources.selectors import active_records

    records = active_records(source, now)
    if connection.vendor == "postgresql":
        # code point order, as Python sorts and SQLite's BINARY compares: the refresh hands
        # its records over in that order, so every mirror of a source walks them alike
        records = records.annotate(key=Collate("record_id", "C"))
    else:
        records = records.annotate(key=F("record_id"))
    values = records.order_by("key").values_list(*SOURCE_ROW_FIELDS)
    after: str | None = None
    while True:
        page = values if after is None else values.filter(key__gt=after)
        rows = list(stream_rows(page[:READ_BATCH], itersize=READ_BATCH, json_loads=json_loads))
        yield from rows
        if len(rows) < READ_BATCH:
            return
        after = rows[-1][0]


def source_wanted(
    source: Source, now: datetime | None = None, records: Iterable[SourceRow] | None = None
) -> Iterator[Mirrored]:
    """Active, unexpired records of an approved, non-denied source (what /api/context serves).

    `records`: the current snapshot's active records in record id order, when the caller holds
    them (a refresh that just stored them); expiry is applied here again, as the stored read
    does."""
    from sources.models import Health, SourceState

    if (
        source.state != SourceState.APPROVED
        or source.health == Health.DENIED
        or source.current_snapshot_id is None
    ):
        return
    # No read time and no staleness here: `retrieved_at` and `stale` are served from the source
    # (bundles.provenance), so a changed refresh rewrites only the chunks of the records that
    # changed, and a source going stale or fresh again rewrites none.
    if records is None:
        rows: Iterable[SourceRow] = _stored_rows(source, now)
    else:
        moment = now or timezone.now()
        rows = (row for row in records if row[5] is None or row[5] > moment)
    prefix = f"source:{source.pk}:"
    max_tags = protocol.MAX_TAGS - 1
    # what every record's provenance says of its source, read from the source once
    about = {"source_id": source.pk, "source": source.identity, "source_name": source.label}
    for record_id, kind, title, body, record_tags, expires in rows:
        memory_type, extra = SOURCE_TYPES.get(kind, ("fact", (kind,)))
        tags = [t for t in record_tags if isinstance(t, str)][:max_tags]
        if extra:
            tags += [t for t in extra if t not in tags]
        ref = prefix + record_id
        yield Mirrored(
            ref=ref,
            content=chunk_content(title, body),
            memory_type=memory_type,
            tags=tags,
            zone="standard",
            is_pinned=False,
            provenance={"origin": "source", "ref": ref, **about, "record_id": record_id},
            expires_at=expires,
        )


def _stored_memories(repository: Repository) -> list[IndexedMemory]:
    """The repository's active memories as its index stored them, in memory id order (code
    points, as the index hands them over)."""
    from reviews.models import Memory, MemoryStatus

    memories = Memory.objects.filter(repository=repository, status=MemoryStatus.ACTIVE)
    if connection.vendor == "postgresql":
        memories = memories.annotate(key=Collate("memory_id", "C"))
    else:
        memories = memories.annotate(key=F("memory_id"))
    values = memories.order_by("key").values_list(*IndexedMemory._fields)
    return [
        IndexedMemory(*row) for row in stream_rows(values, itersize=2000, json_loads=json_loads)
    ]


def repository_wanted(
    repository: Repository, memories: list[IndexedMemory] | None = None
) -> Iterator[Mirrored]:
    """The repository's `active` memories as of its index (proposals never). `memories`: those
    the index just stored, when the caller holds them (see reviews.signals)."""
    if memories is None:
        memories = _stored_memories(repository)
    # every memory of the repository is mirrored: its approvals in one read
    approvals = memory_provenance(
        repository,
        memories,  # type: ignore[arg-type]
        repository_approvals(repository),
    )
    prefix = f"repository:{repository.pk}:"
    for memory in memories:
        memory_type, zone, extra = MEMORY_TYPES.get(memory.type, ("fact", "standard", ()))
        tags = memory_tags(memory)  # type: ignore[arg-type]
        tags += [t for t in extra if t not in tags]
        ref = prefix + memory.memory_id
        yield Mirrored(
            ref=ref,
            content=memory_content(
                title=memory.title, body=memory.body, front_matter=memory.front_matter
            ),
            memory_type=memory_type,
            tags=tags,
            zone=zone,
            is_pinned=memory_pinned(memory),  # type: ignore[arg-type]
            provenance={
                "origin": "repository",
                "ref": ref,
                "repository_id": repository.pk,
                "repository": repository.name,
                "memory_id": memory.memory_id,
                "memory_ref": memory.ref,
                **approvals[memory.memory_id],
            },
        )


# ----------------------------------------------------------------------------- reconcile


@transaction.atomic
def brain_mirror_source(
    *, source: Source, actor: Actor | None = None, records: Iterable[SourceRow] | None = None
) -> MirrorResult:
    """Make the brain hold exactly the source's served records (call in the state change's
    transaction). `records`: the current snapshot's active records, when the caller holds them
    (see `source_wanted`)."""
    result = _reconcile(
        team=source.team,
        group=f"source:{source.pk}",
        kind=OriginKind.SOURCE,
        wanted=source_wanted(source, records=records),
        actor=actor or Actor.system(),
        label=f"source {source.label}",
    )
    if result.chunks_created:  # embedded by the worker once this transaction commits
        brain_embed_queue(team_id=source.team_id)
    return result


@transaction.atomic
def brain_mirror_repository(
    *,
    repository: Repository,
    actor: Actor | None = None,
    memories: list[IndexedMemory] | None = None,
) -> MirrorResult:
    """Make the brain hold exactly the repository's active memories (after each index).
    `memories`: the active memories the index just stored (see `repository_wanted`)."""
    result = _reconcile(
        team=repository.team,
        group=f"repository:{repository.pk}",
        kind=OriginKind.REPOSITORY,
        wanted=repository_wanted(repository, memories),
        actor=actor or Actor.system(),
        label=f"repository {repository.name}",
    )
    # Embedded by the worker once this transaction commits: new chunks, and new or changed
    # proposals (their vectors feed the reviewer hints).
    if result.chunks_created or proposal_vectors_pending(
        team_id=repository.team_id, repository_id=repository.pk
    ):
        brain_embed_queue(team_id=repository.team_id)
    return result
