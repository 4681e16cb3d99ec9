"""Hints for people, never decisions: which served memories a text is close to in meaning.

A reviewer sees, on a proposal's page and in the queue, the most similar active memories (the
proposal's own repository first): "possible duplicate" from SEMANTIC_DUPLICATE_PERCENT cosine
similarity, "related" from SEMANTIC_RELATED_PERCENT. Similarity measures topic, not
contradiction, so nothing here approves, rejects or blocks. The import report names imported
chunks that nearly duplicate served ones (import_near_duplicates).

A proposal's vector is computed by the worker's embedding run (proposal_vectors_embed, stored
as bundles.models.ProposalVector), so a page render runs only the nearest-neighbour query and
never waits for the model to load; until then the page says the hints are being computed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet

from bundles.embeddings import model as embedding_model
from bundles.embeddings import store
from bundles.embeddings.team_model import searchable_model
from bundles.models import BrainSettings, Chunk, ChunkOrigin, ProposalVector
from bundles.secrets import mask_secrets
from bundles.selectors import served_chunks
from formats.crosswalk import chunk_content
from memoryadmin.models import Team

if TYPE_CHECKING:
    import numpy as np

DUPLICATE = "possible duplicate"
RELATED = "related"
HINTS_PER_TEXT = 3
CANDIDATES = 12


@dataclass
class Similar:
    chunk_id: int
    similarity: float
    label: str
    text: str  # the memory's text, secrets masked (the template escapes it)
    same_repository: bool = False
    origin: dict[str, Any] = field(default_factory=dict)  # kind, ids for the link

    @property
    def percent(self) -> int:
        return round(self.similarity * 100)


def _label(similarity: float) -> str | None:
    if similarity * 100 >= settings.SEMANTIC_DUPLICATE_PERCENT:
        return DUPLICATE
    if similarity * 100 >= settings.SEMANTIC_RELATED_PERCENT:
        return RELATED
    return None


def similar_to_vectors(
    team: Team,
    model_dim: tuple[str, int],
    vectors: list[np.ndarray],
    *,
    repository_id: int | None = None,
    exclude: Iterable[int] = (),
) -> list[list[Similar]]:
    """For each vector (of the team's model), up to HINTS_PER_TEXT served memories similar
    enough to show. Runs no model: the vectors were computed by the worker."""
    if not vectors:
        return []
    model, dim = model_dim
    chunks = served_chunks(team).exclude(pk__in=list(exclude))
    found = [
        [(n.chunk_id, n.similarity) for n in near if _label(n.similarity)]
        for near in store.nearest_many(chunks, vectors, model=model, dim=dim, limit=CANDIDATES)
    ]
    return _describe(team, found, repository_id)


def _describe(
    team: Team, found: list[list[tuple[int, float]]], repository_id: int | None
) -> list[list[Similar]]:
    ids = {pk for hits in found for pk, _ in hits}
    chunks = {
        c.pk: c for c in Chunk.objects.filter(pk__in=ids).only("id", "content", "secret_findings")
    }
    origins: dict[int, dict[str, Any]] = {}
    for origin in ChunkOrigin.objects.filter(chunk_id__in=ids, active=True).order_by("id"):
        origins.setdefault(origin.chunk_id, {"kind": origin.kind, **origin.metadata})
    _link_memories(origins)
    group = f"repository:{repository_id}" if repository_id is not None else None
    same_repo = set(
        ChunkOrigin.objects.filter(chunk_id__in=ids, active=True, group=group).values_list(
            "chunk_id", flat=True
        )
        if group
        else []
    )
    answer = []
    for hits in found:
        items = [
            Similar(
                chunk_id=pk,
                similarity=similarity,
                label=_label(similarity) or RELATED,
                text=mask_secrets(chunks[pk].content, chunks[pk].secret_findings),
                same_repository=pk in same_repo,
                origin=origins.get(pk, {"kind": "brain"}),
            )
            for pk, similarity in hits
            if pk in chunks
        ]
        # The proposal's own repository first, then the closest.
        items.sort(key=lambda s: (not s.same_repository, -s.similarity, -s.chunk_id))
        answer.append(items[:HINTS_PER_TEXT])
    return answer


def _link_memories(origins: dict[int, dict[str, Any]]) -> None:
    """Repository origins get the pk of their memory's page (reviews' proposal page)."""
    from reviews.models import Memory

    wanted = [o for o in origins.values() if o["kind"] == "repository"]
    if not wanted:
        return
    pks = {
        (repo, memory_id): pk
        for pk, repo, memory_id in Memory.objects.filter(
            repository_id__in={o.get("repository_id") for o in wanted},
            memory_id__in={o.get("memory_id") for o in wanted},
        ).values_list("pk", "repository_id", "memory_id")
    }
    for origin in wanted:
        origin["memory_pk"] = pks.get((origin.get("repository_id"), origin.get("memory_id")))


# What the hints and the text beside them read of a proposal (reviews.models.Memory).
HINT_FIELDS = (
    "team_id",
    "repository_id",
    "memory_id",
    "ref",
    "status",
    "blob_sha",
    "title",
    "body",
    "secret_findings",
)


def with_hint_fields(memories: list[Any]) -> list[Any]:
    """`memories` with HINT_FIELDS loaded: as they are when none is deferred, else read again
    in one query, in the same order. A page's rows load only what its list shows
    (reviews.selectors.QUEUE_FIELDS), and reading a deferred field is a query per row: the
    queue's 50 rows cost 50 queries for `team_id` alone."""
    if not memories or not embedding_model.available():
        return memories
    if not any(set(HINT_FIELDS) & memory.get_deferred_fields() for memory in memories):
        return memories
    loaded = type(memories[0]).objects.only(*HINT_FIELDS).in_bulk([m.pk for m in memories])
    return [loaded[memory.pk] for memory in memories if memory.pk in loaded]


def proposal_hints(memories: Iterable[Any]) -> dict[int, list[Similar] | None]:
    """Memory pk -> hints for MemoryRail proposals (reviews.models.Memory), one batch; None
    while the worker has not embedded the proposal as it is now (the page says the similar
    memories are being computed). Never encodes: a page render must not wait for the model."""
    memories = [m for m in memories if getattr(m, "pk", None) is not None]
    if not memories or not embedding_model.available():
        return {}
    by_key: dict[tuple[int, int], list[Any]] = {}
    for memory in memories:
        by_key.setdefault((memory.team_id, memory.repository_id), []).append(memory)
    hints: dict[int, list[Similar] | None] = {}
    for (team_id, repository_id), group in by_key.items():
        team = group[0].team if hasattr(group[0], "team") else Team.objects.get(pk=team_id)
        model_dim = searchable_model(team)
        if model_dim is None:
            if not _team_model_unset(team):
                continue  # the team's model does not run here: no hints, nothing to wait for
            hints.update({m.pk: None for m in group})  # the worker adopts ours, then embeds
            continue
        stored = _stored_vectors(group, model_dim)
        ready = [m for m in group if m.pk in stored]
        hints.update({m.pk: None for m in group if m.pk not in stored})
        refs = [f"repository:{repository_id}:{m.memory_id}" for m in ready]
        own = ChunkOrigin.objects.filter(team_id=team_id, ref__in=refs).values_list(
            "chunk_id", flat=True
        )
        found = similar_to_vectors(
            team,
            model_dim,
            [stored[m.pk] for m in ready],
            repository_id=repository_id,
            exclude=list(own),
        )
        hints.update({m.pk: items for m, items in zip(ready, found, strict=True)})
    return hints


def _team_model_unset(team: Team) -> bool:
    settings_row = BrainSettings.objects.filter(team=team).first()
    return settings_row is None or not settings_row.is_set


def _stored_vectors(memories: list[Any], model_dim: tuple[str, int]) -> dict[int, np.ndarray]:
    """The worker's vectors of these proposals as their files are now (same git blob)."""
    model, dim = model_dim
    sha = {m.pk: m.blob_sha for m in memories}
    found = {}
    for memory_id, blob_sha, blob in ProposalVector.objects.filter(
        memory_id__in=list(sha), embedding_model=model, embedding_dim=dim
    ).values_list("memory_id", "blob_sha", "embedding"):
        vector = store.from_blob(blob, dim)
        if vector is not None and blob_sha == sha[memory_id]:
            found[memory_id] = vector
    return found


def _unembedded_proposals(team_id: int, model: str) -> QuerySet[Any]:
    """The team's proposals without a vector of `model` for their file as it is now."""
    from reviews.models import Memory, MemoryStatus

    fresh = ProposalVector.objects.filter(
        memory_id=OuterRef("pk"), blob_sha=OuterRef("blob_sha"), embedding_model=model
    )
    return (
        Memory.objects.filter(team_id=team_id, status=MemoryStatus.PROPOSED)
        .exclude(Exists(fresh))
        .order_by("id")
    )


def proposal_vectors_pending(*, team_id: int, repository_id: int | None = None) -> bool:
    """Whether an embedding run has proposals to embed (the mirror queues one after an index)."""
    if not embedding_model.available():
        return False
    settings_row = BrainSettings.objects.filter(team_id=team_id).first()
    model = settings_row.embedding_model if settings_row and settings_row.is_set else ""
    if model and not embedding_model.runs(model):
        return False
    pending = _unembedded_proposals(team_id, model or embedding_model.MODEL_NAME)
    if repository_id is not None:
        pending = pending.filter(repository_id=repository_id)
    return pending.exists()


def proposal_vectors_embed(*, team_id: int, model: str, size: int) -> int:
    """The worker's part: embed the team's proposals that lack a vector of `model` (batches of
    `size`, one transaction each); drop the vectors of memories no longer proposed."""
    from reviews.models import MemoryStatus

    ProposalVector.objects.filter(team_id=team_id).exclude(
        memory__status=MemoryStatus.PROPOSED
    ).delete()
    done, after = 0, 0
    pending = _unembedded_proposals(team_id, model).values_list("id", "blob_sha", "title", "body")
    while True:
        rows = list(pending.filter(id__gt=after)[:size])
        if not rows:
            return done
        vectors = embedding_model.encode([chunk_content(title, body) for _, _, title, body in rows])
        ids = [pk for pk, _, _, _ in rows]
        with transaction.atomic():
            ProposalVector.objects.filter(memory_id__in=ids).delete()
            ProposalVector.objects.bulk_create(
                ProposalVector(
                    team_id=team_id,
                    memory_id=pk,
                    blob_sha=blob_sha,
                    embedding=store.to_blob(vector),
                    embedding_model=model,
                    embedding_dim=int(vector.shape[0]),
                )
                for (pk, blob_sha, _, _), vector in zip(rows, vectors, strict=True)
            )
        done += len(rows)
        after = rows[-1][0]


NEAR_DUPLICATE_CHECKS = 200  # imported chunks compared per import (a hint, not an audit)


def import_near_duplicates(
    team: Team, chunk_ids: list[int], *, against: QuerySet[Chunk] | None = None, limit: int = 20
) -> list[dict[str, Any]]:
    """Of these chunks (with a vector of the team's model), those that nearly duplicate a
    served chunk outside them: [{"chunk_id", "duplicate_of", "similarity"}], closest first."""
    model_dim = searchable_model(team)
    if model_dim is None or not chunk_ids:
        return []
    model, dim = model_dim
    served = (against if against is not None else served_chunks(team)).exclude(pk__in=chunk_ids)
    rows = Chunk.objects.filter(
        pk__in=chunk_ids[:NEAR_DUPLICATE_CHECKS], embedding_model=model, embedding_dim=dim
    ).values_list("id", "embedding")
    vectors = {}
    for pk, blob in rows:
        vector = store.from_blob(blob, dim) if blob is not None else None
        if vector is not None:
            vectors[pk] = vector
    nearest = store.nearest_many(served, list(vectors.values()), model=model, dim=dim, limit=1)
    pairs = [
        {
            "chunk_id": pk,
            "duplicate_of": near[0].chunk_id,
            "similarity": round(near[0].similarity, 4),
        }
        for pk, near in zip(vectors, nearest, strict=True)
        if near and near[0].similarity * 100 >= settings.SEMANTIC_DUPLICATE_PERCENT
    ]
    pairs.sort(key=lambda p: (-p["similarity"], p["chunk_id"]))
    return pairs[:limit]


def describe_near_duplicates(pairs: list[dict[str, Any]]) -> list[str]:
    return [
        f"imported chunk #{p['chunk_id']} nearly duplicates served chunk "
        f"#{p['duplicate_of']} ({round(p['similarity'] * 100)}% similar)"
        for p in pairs
    ]


def imported_since(team: Team, floor: int) -> list[int]:
    """The ids of the team's imported chunks above `floor` (this import's), first ones first."""
    return list(
        Chunk.objects.filter(team=team, pk__gt=floor, origin="import")
        .order_by("id")
        .values_list("id", flat=True)[:NEAR_DUPLICATE_CHECKS]
    )
