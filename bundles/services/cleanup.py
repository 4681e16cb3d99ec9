"""Cleaning up the brain by hand: delete one chunk, undo one import.

Both are a person's acts (MemoryAI §3.7: DNA is never removed automatically), and DNA goes
only when that person says so explicitly (`confirm_dna` / `include_dna`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from bundles.models import Chunk, ChunkOrigin, ImportedChunk, ImportRun, Origin
from formats import memoryai as protocol
from memoryadmin.audit import Actor, audit_record
from memoryadmin.batching import for_batches
from memoryadmin.errors import Conflict, DomainError
from memoryadmin.models import Scope
from memoryadmin.permissions import actor_require
from memoryadmin.templatetags.memoryadmin_format import counted


class DnaConfirmationRequired(DomainError):
    """Deleting a DNA chunk needs the person to confirm it is DNA they delete."""

    code = "dna-confirmation-required"


class ChunkAlreadyDeleted(Conflict):
    code = "chunk-already-deleted"


class ImportAlreadyUndone(Conflict):
    code = "import-already-undone"


def dna_q(prefix: str = "") -> Q:
    """DNA by flag or by its fields (§3.7: any one suffices)."""
    return (
        Q(**{f"{prefix}is_dna": True})
        | Q(**{f"{prefix}is_pinned": True})
        | Q(**{f"{prefix}memory_type__in": protocol.DNA_TYPES})
        | Q(**{f"{prefix}zone__in": protocol.DNA_ZONES})
    )


def chunk_is_dna(chunk: Chunk) -> bool:
    return chunk.is_dna or protocol.is_dna(chunk.memory_type, chunk.zone, chunk.is_pinned)


@transaction.atomic
def chunk_user_delete(*, chunk: Chunk, actor: Actor, confirm_dna: bool = False) -> Chunk:
    """A person deletes a chunk: kept as deleted (never exported, never served, never brought
    back by a re-import or a mirror), audited. DNA only with `confirm_dna`."""
    actor_require(actor, chunk.team, Scope.BUNDLES_IMPORT)
    chunk = Chunk.objects.select_for_update().get(pk=chunk.pk)
    if chunk.is_deleted:
        raise ChunkAlreadyDeleted({"chunk": f"Chunk {chunk.pk} is deleted already."})
    dna = chunk_is_dna(chunk)
    if dna and not confirm_dna:
        raise DnaConfirmationRequired(
            {"confirm_dna": f"Chunk {chunk.pk} is DNA: confirm that you delete a DNA chunk."}
        )
    now = timezone.now()
    chunk.is_deleted, chunk.deleted_at, chunk.updated_at = True, now, now
    chunk.save(update_fields=["is_deleted", "deleted_at", "updated_at"])
    origins = list(ChunkOrigin.objects.filter(chunk=chunk).values_list("ref", flat=True))
    flags = [
        f for f, on in (("suspicious", chunk.suspicious), ("secret", chunk.secret_findings)) if on
    ]
    audit_record(
        actor=actor,
        action="chunk.delete",
        team=chunk.team,
        target=chunk,
        summary=f"Deleted chunk {chunk.pk} (kept as deleted, never exported)",
        data={
            "automatic": False,
            "user_deleted": True,
            "content_hash": chunk.content_hash,
            "memory_type": chunk.memory_type,
            "is_dna": dna,
            "flags": flags,
            "origins": origins[:50],
        },
    )
    return chunk


@dataclass(frozen=True)
class UndoPlan:
    """What undoing one import removes and keeps (every count a number of chunks)."""

    carried: int  # chunks the import carried (inserted or already held)
    inserted: int  # chunks it created (or an undone import created and it carried too)
    remove: int  # created, held by nothing else: removed (DNA only when included)
    remove_dna: int  # of `remove`, DNA chunks (removed only when include_dna)
    kept_source: int  # created, but a source or repository serves them now
    kept_other_import: int  # created, but another import (not undone) carried them too
    kept_manual: int  # created, but entered or changed by hand since
    kept_deleted: int  # created, deleted by a person since: stay deleted (never exported)
    held_before: int  # carried, but held before this import: never its to take back

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def _created(run: ImportRun) -> QuerySet[Chunk]:
    """Chunks this import carried that an import created: this one, or one undone since (its
    chunk stayed because this import held it too). Chunks from before imports were tracked,
    entered by hand or mirrored are never an import's to take back."""
    carried = ImportedChunk.objects.filter(run=run).values("chunk_id")
    created = ImportedChunk.objects.filter(chunk_id=OuterRef("pk"), inserted=True).filter(
        Q(run_id=run.pk) | Q(run__undone_at__isnull=False)
    )
    return Chunk.objects.filter(team_id=run.team_id, pk__in=carried).filter(Exists(created))


def _held_elsewhere(run: ImportRun) -> tuple[Exists, Exists]:
    by_origin = Exists(ChunkOrigin.objects.filter(chunk_id=OuterRef("pk")))
    by_import = Exists(
        ImportedChunk.objects.filter(chunk_id=OuterRef("pk"), run__undone_at__isnull=True).exclude(
            run_id=run.pk
        )
    )
    return by_origin, by_import


def _removable(run: ImportRun) -> QuerySet[Chunk]:
    by_origin, by_import = _held_elsewhere(run)
    return (
        _created(run)
        .filter(is_deleted=False)
        .exclude(origin=Origin.MANUAL)
        .exclude(by_origin)
        .exclude(by_import)
    )


def import_undo_plan(run: ImportRun) -> UndoPlan:
    by_origin, by_import = _held_elsewhere(run)
    created = _created(run)
    live = created.filter(is_deleted=False)
    removable = _removable(run)
    # the chunks still there (a chunk deleted while the import ran may leave a row behind)
    carried = Chunk.objects.filter(
        team_id=run.team_id, pk__in=ImportedChunk.objects.filter(run=run).values("chunk_id")
    ).count()
    inserted = created.count()
    return UndoPlan(
        carried=carried,
        inserted=inserted,
        remove=removable.count(),
        remove_dna=removable.filter(dna_q()).count(),
        kept_source=live.filter(by_origin).count(),
        kept_other_import=live.exclude(by_origin).filter(by_import).count(),
        kept_manual=live.exclude(by_origin).exclude(by_import).filter(origin=Origin.MANUAL).count(),
        kept_deleted=created.filter(is_deleted=True).count(),
        held_before=carried - inserted,
    )


@transaction.atomic
def import_undo(*, run: ImportRun, actor: Actor, include_dna: bool = False) -> dict[str, int]:
    """Remove the chunks this import created that nothing else holds (their edges go with
    them); keep every chunk a source, a repository, a person or another import also holds.
    DNA chunks go only with `include_dna`. Entities, sessions, moods and agents an import
    merges by upsert are not taken back (other imports merged into the same rows)."""
    actor_require(actor, run.team, Scope.BUNDLES_IMPORT)
    run = ImportRun.objects.select_for_update().select_related("team").get(pk=run.pk)
    if run.undone_at is not None:
        raise ImportAlreadyUndone(
            {"import": f"Import #{run.pk} was undone already ({run.undone_by})."}
        )
    plan = import_undo_plan(run)
    targets = _removable(run)
    if not include_dna:
        targets = targets.exclude(dna_q())
    ids = list(targets.values_list("pk", flat=True))
    for batch in for_batches(ids):
        Chunk.objects.filter(pk__in=batch).delete()  # edges and links cascade
    report = {
        **plan.as_dict(),
        "removed": len(ids),
        "kept_dna": plan.remove_dna if not include_dna else 0,
        "include_dna": include_dna,
    }
    run.undone_at, run.undone_by, run.undo_report = timezone.now(), actor.label, report
    run.save(update_fields=["undone_at", "undone_by", "undo_report"])
    audit_record(
        actor=actor,
        action="bundle.import-undo",
        team=run.team,
        target=run,
        summary=(
            f"Undid import #{run.pk}: removed {counted(len(ids), 'chunk')}, kept "
            f"{plan.inserted - len(ids)} that something else holds or that are DNA"
        ),
        data={**report, "job": run.job_id},
    )
    return report
