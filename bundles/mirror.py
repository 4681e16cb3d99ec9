"""One team memory: approved source records and active repository memories, mirrored as chunks.

Each mirrored thing is a `ChunkOrigin` (ref `source:<id>:<record id>` or
`repository:<id>:<memory id>`) pointing at the chunk that holds its current text. A chunk is
*served* (exported, counted) when it is not user-deleted and either stands on its own (imported
or entered) or has an active, unexpired origin. Reconciling a source or a repository computes
the wanted set, upserts it and deactivates the rest, inside the caller's transaction, so the
brain never disagrees with the source or review state. See docs/brain.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.db import transaction

from bundles.embeddings.queueing import brain_embed_queue
from bundles.embeddings.similar import proposal_vectors_pending
from bundles.mirrored import Mirrored, MirrorResult
from bundles.models import OriginKind
from bundles.reconcile import _reconcile
from formats import memoryai as protocol
from formats.crosswalk import MEMORY_TYPES, SOURCE_TYPES, chunk_content, memory_content
from memoryadmin.audit import Actor
from reviews.selectors import memory_pinned, memory_provenance, memory_tags

if TYPE_CHECKING:
    from reviews.models import Repository
    from sources.models import Source


# ----------------------------------------------------------------------------- desired sets


def source_wanted(source: Source, now: datetime | None = None) -> list[Mirrored]:
    """Active, unexpired records of an approved, non-denied source (what /api/context serves)."""
    from sources.models import Health, SourceState
    from sources.selectors import active_records

    if (
        source.state != SourceState.APPROVED
        or source.health == Health.DENIED
        or source.current_snapshot_id is None
    ):
        return []
    stale = source.health == Health.STALE
    # When this text was read: the snapshot's read time. An unchanged refresh keeps the
    # snapshot, so it rewrites nothing in the brain (freshness is the `stale` flag).
    retrieved_at = protocol.format_timestamp(source.current_snapshot.created_at)
    wanted = []
    for record in active_records(source, now).order_by("record_id").iterator(chunk_size=1000):
        memory_type, extra = SOURCE_TYPES.get(record.kind, ("fact", (record.kind,)))
        tags = [t for t in record.tags if isinstance(t, str)][: protocol.MAX_TAGS - 1]
        tags += [t for t in extra if t not in tags]
        ref = f"source:{source.pk}:{record.record_id}"
        wanted.append(
            Mirrored(
                ref=ref,
                content=chunk_content(record.title, record.body),
                memory_type=memory_type,
                tags=tags,
                zone="standard",
                is_pinned=False,
                provenance={
                    "origin": "source",
                    "ref": ref,
                    "source_id": source.pk,
                    "source": source.identity,
                    "source_name": source.label,
                    "record_id": record.record_id,
                    "retrieved_at": retrieved_at,
                    "stale": stale,
                },
                expires_at=record.expires,
            )
        )
    return wanted


def repository_wanted(repository: Repository) -> list[Mirrored]:
    """The repository's `active` memories as of its index (proposals never)."""
    from reviews.models import Memory, MemoryStatus

    memories = list(
        Memory.objects.filter(repository=repository, status=MemoryStatus.ACTIVE).order_by(
            "memory_id"
        )
    )
    approvals = memory_provenance(repository, memories)
    wanted = []
    for memory in memories:
        memory_type, zone, extra = MEMORY_TYPES.get(memory.type, ("fact", "standard", ()))
        tags = memory_tags(memory)
        tags += [t for t in extra if t not in tags]
        ref = f"repository:{repository.pk}:{memory.memory_id}"
        wanted.append(
            Mirrored(
                ref=ref,
                content=memory_content(
                    title=memory.title, body=memory.body, front_matter=memory.front_matter
                ),
                memory_type=memory_type,
                tags=tags,
                zone=zone,
                is_pinned=memory_pinned(memory),
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
        )
    return wanted


# ----------------------------------------------------------------------------- reconcile


@transaction.atomic
def brain_mirror_source(*, source: Source, actor: Actor | None = None) -> MirrorResult:
    """Make the brain hold exactly the source's served records (call in the state change's
    transaction)."""
    result = _reconcile(
        team=source.team,
        group=f"source:{source.pk}",
        kind=OriginKind.SOURCE,
        wanted=source_wanted(source),
        actor=actor or Actor.system(),
        label=f"source {source.label}",
    )
    if result.chunks_created:  # embedded by the worker once this transaction commits
        brain_embed_queue(team_id=source.team_id)
    return result


@transaction.atomic
def brain_mirror_repository(*, repository: Repository, actor: Actor | None = None) -> MirrorResult:
    """Make the brain hold exactly the repository's active memories (after each index)."""
    result = _reconcile(
        team=repository.team,
        group=f"repository:{repository.pk}",
        kind=OriginKind.REPOSITORY,
        wanted=repository_wanted(repository),
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
