"""The embedding lifecycle: every live chunk of a team gets a vector of the team's model.

One idempotent run does all of it (bundles.tasks.brain_embed, in the worker): chunks mirrored
from sources and repositories (queued when the mirror commits), imported chunks whose vectors
were dropped or absent (queued when the import commits), and the whole brain after the team's
model changes; then the team's MemoryRail proposals that lack a vector of the model (the
reviewer hints read them: bundles.embeddings.similar). It walks the chunks that lack a vector
of the team's model in id order, SEMANTIC_EMBED_BATCH at a time, one transaction per batch
(one UPDATE statement on PostgreSQL), so memory stays flat, progress is visible at once, and
a killed run resumes where it stopped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings as django_settings
from django.db import connection, transaction
from django.db.models import QuerySet

from bundles.embeddings import model as embedding_model
from bundles.embeddings import schema, store
from bundles.embeddings.similar import (
    describe_near_duplicates,
    import_near_duplicates,
    proposal_vectors_embed,
)
from bundles.models import BrainSettings, Chunk
from bundles.services.chunks import brain_settings_set
from memoryadmin.audit import Actor, audit_record
from memoryadmin.locks import named_lock
from memoryadmin.models import Team

logger = logging.getLogger(__name__)
NEAR_DUPLICATE_CHECKS = 200  # imported chunks compared with the served ones per run


@dataclass
class EmbedRun:
    model: str = ""
    embedded: int = 0
    filled: int = 0  # pgvector: vectors filled from blobs already of the model
    proposals: int = 0  # MemoryRail proposals embedded for the reviewer hints
    skipped: str = ""


def team_brain_settings(team: Team) -> BrainSettings:
    settings, _ = BrainSettings.objects.get_or_create(team=team)
    return settings


@transaction.atomic
def brain_model_adopt(*, team: Team) -> BrainSettings:
    """A team without a model takes the one we run (audited); a set model is left alone."""
    settings = BrainSettings.objects.select_for_update().get_or_create(team=team)[0]
    if settings.is_set or not embedding_model.available():
        return settings
    return brain_settings_set(
        team=team,
        actor=Actor.system(),
        embedding_model=embedding_model.MODEL_NAME,
        embedding_dim=embedding_model.MODEL_DIM,
        reembed=False,  # the caller is the embedding run
    )


def pending_chunks(team_id: int, model: str, dim: int) -> QuerySet[Chunk]:
    """Live chunks without a vector of the model (none, another model's, a wrong length)."""
    return (
        Chunk.objects.filter(team_id=team_id, is_deleted=False)
        .exclude(embedding_model=model, embedding_dim=dim, embedding__isnull=False)
        .order_by("id")
    )


def brain_embed(*, team_id: int, batch_size: int | None = None) -> EmbedRun:
    """Embed what the team's brain lacks, batch by batch (raises LockBusy while another run
    holds the team's embedding lock: the task retries, so no queued chunk is forgotten)."""
    run = EmbedRun()
    team = Team.objects.filter(pk=team_id).first()
    if team is None:
        run.skipped = "team gone"
        return run
    if not embedding_model.available():
        run.skipped = "semantic off"
        return run
    settings = brain_model_adopt(team=team)
    if not embedding_model.runs(settings.embedding_model):
        run.skipped = f"team model {settings.embedding_model!r} does not run here"
        return run
    run.model, dim = settings.embedding_model, settings.embedding_dim
    size = batch_size or django_settings.SEMANTIC_EMBED_BATCH
    with named_lock(f"brain-embed:{team_id}", ttl=3600):
        run.embedded, imported = _embed_pending(team_id, run.model, dim, size)
        if store.backend() == store.PGVECTOR:
            run.filled = _fill_from_blobs(team_id, run.model, dim, size)
        run.proposals = proposal_vectors_embed(team_id=team_id, model=run.model, size=size)
    duplicates = _near_duplicates(team, imported)
    if run.embedded or run.proposals:
        with transaction.atomic():
            if duplicates:
                audit_record(
                    actor=Actor.system(),
                    action="bundle.import_near_duplicates",
                    team=team,
                    target_type="bundles.brain",
                    target_id=team.pk,
                    summary=f"{len(duplicates)} imported chunks nearly duplicate served ones",
                    data={"report": {"warnings": describe_near_duplicates(duplicates)}},
                )
            audit_record(
                actor=Actor.system(),
                action="brain.embed",
                team=team,
                target_type="bundles.brain",
                target_id=team.pk,
                summary=f"Embedded {run.embedded} chunks and {run.proposals} proposals "
                f"with {run.model}",
                data={
                    "model": run.model,
                    "embedded": run.embedded,
                    "filled": run.filled,
                    "proposals": run.proposals,
                },
            )
    return run


def _model_unchanged(team_id: int, model: str) -> bool:
    current = BrainSettings.objects.filter(team_id=team_id).values_list(
        "embedding_model", flat=True
    )
    return list(current) == [model]


def _embed_pending(team_id: int, model: str, dim: int, size: int) -> tuple[int, list[int]]:
    """(how many were embedded, the imported ones among the first few: for the hint)."""
    done, after, imported = 0, 0, []
    pending = pending_chunks(team_id, model, dim).values_list("id", "content", "origin")
    while True:
        rows = list(pending.filter(id__gt=after)[:size])
        # A model change mid-run: stop; the change queued a run of its own.
        if not rows or not _model_unchanged(team_id, model):
            return done, imported
        vectors = embedding_model.encode([content for _, content, _ in rows])
        with transaction.atomic():
            store.write_vectors(
                [(pk, vectors[i]) for i, (pk, _, _) in enumerate(rows)], model=model
            )
        done += len(rows)
        after = rows[-1][0]
        if len(imported) < NEAR_DUPLICATE_CHECKS:
            imported += [pk for pk, _, origin in rows if origin == "import"]


def _near_duplicates(team: Team, imported: list[int]) -> list[dict[str, Any]]:
    if not imported:
        return []
    return import_near_duplicates(team, imported[:NEAR_DUPLICATE_CHECKS])


def _fill_from_blobs(team_id: int, model: str, dim: int, size: int) -> int:
    done, after = 0, 0
    while True:
        rows = store.missing_vector_rows(team_id, model, dim, after, size)
        if not rows:
            return done
        vectors = [(pk, store.blob_floats(blob, dim)) for pk, blob in rows]
        with transaction.atomic():
            store.fill_vectors([(pk, vec) for pk, vec in vectors if vec is not None])
        done += len(rows)
        after = rows[-1][0]


@dataclass
class PgvectorEnable:
    enabled: bool
    message: str
    created_column: bool = False
    filled: int = 0
    teams: list[str] = field(default_factory=list)


def pgvector_enable(*, actor: Actor, batch_size: int = 2000) -> PgvectorEnable:
    """Turn pgvector on after install (manage.py enable_pgvector): create the extension if it
    can, add the column and trigger, copy the stored vectors of each team's model into the
    column (no model needed), then build the HNSW index (once, after the copy: faster than
    growing the graph row by row). Idempotent: a second run fills what is missing."""
    reason = schema.extension_missing_reason(connection)
    if reason:
        return PgvectorEnable(enabled=False, message=f"pgvector is not enabled: {reason}.")
    created = not schema.has_vector_column(connection)
    with transaction.atomic():
        schema.install_column(connection)
    store.forget_backend()
    result = PgvectorEnable(enabled=True, message="", created_column=created)
    for settings in BrainSettings.objects.select_related("team").order_by("team_id"):
        if not settings.is_set or settings.embedding_dim != schema.VECTOR_DIM:
            continue  # another dimension cannot go in the vector(384) column: exact scan
        filled = _fill_from_blobs(
            settings.team_id, settings.embedding_model, settings.embedding_dim, batch_size
        )
        result.filled += filled
        if filled:
            result.teams.append(settings.team.slug)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL maintenance_work_mem = '256MB'")
        schema.install_index(connection)
        audit_record(
            actor=actor,
            action="brain.pgvector-enable",
            target_type="bundles.brain",
            summary=f"pgvector enabled: {result.filled} stored vectors copied into the index",
            data={"created_column": created, "filled": result.filled, "teams": result.teams},
        )
    result.message = (
        f"pgvector is enabled: {'added' if created else 'kept'} the embedding_vector column "
        f"and its HNSW index, copied {result.filled:,} stored vectors"
        f"{' (' + ', '.join(result.teams) + ')' if result.teams else ''}. Restart the web and "
        "worker processes so they search with pgvector (each looks up the backend once)."
    )
    return result


def embedding_status(team: Team) -> dict[str, Any]:
    """What the Brain page, /healthz and the API say: backend, model, progress."""
    total = Chunk.objects.filter(team=team, is_deleted=False).count()
    status: dict[str, Any] = {
        "enabled": embedding_model.available(),
        "backend": store.backend(),
        "model": "",
        "dim": 0,
        "embedded": 0,
        "total": total,
    }
    if not status["enabled"]:
        status["text"] = embedding_model.ENABLE_HINT
        return status
    settings = BrainSettings.objects.filter(team=team).first()
    model = settings.embedding_model if settings and settings.is_set else ""
    if model and not embedding_model.runs(model):
        status["model"] = model
        status["text"] = (
            f"the team's model {model} does not run here: set it to "
            f"{embedding_model.MODEL_NAME} for meaning-based search"
        )
        return status
    model = model or embedding_model.MODEL_NAME
    dim = settings.embedding_dim if settings and settings.is_set else embedding_model.MODEL_DIM
    embedded = store.vector_count(team.pk, model, dim) if total else 0
    status.update(model=model, dim=dim, embedded=embedded)
    status["text"] = f"embedded {embedded:,} of {total:,} with {model}"
    return status


def semantic_health() -> dict[str, Any]:
    """/healthz: whether meaning-based search runs, on which backend, with which model."""
    return {
        "enabled": embedding_model.available(),
        "installed": embedding_model.installed(),
        "backend": store.backend(),
        "model": embedding_model.MODEL_NAME if embedding_model.available() else "",
        "loaded": embedding_model.is_loaded(),
    }
