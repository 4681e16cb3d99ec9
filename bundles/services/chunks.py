"""Chunk writes outside imports: upsert (for mirrors), delete, decay, expiry — DNA is protected."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from bundles.models import BrainSettings, Chunk, Origin
from formats import memoryai as protocol
from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Team
from memoryadmin.templatetags.memoryadmin_format import counted


class DnaProtectedError(PermissionError):
    """An automatic process tried to decay, expire or delete a DNA chunk."""


@transaction.atomic
def chunk_upsert(
    *,
    team: Team,
    actor: Actor,
    content: str,
    memory_type: str,
    origin: str = Origin.MANUAL,
    metadata: dict[str, Any] | None = None,
    tags: list[str] | None = None,
    zone: str = "standard",
    importance: float = 0.5,
    is_pinned: bool = False,
    valid_until: datetime | None = None,
    audit: bool = True,
) -> tuple[Chunk, bool]:
    """Create or update the team's chunk with this content (identity = content hash).

    Used by mirrors of source records and repository memories (origin `source`/`repository`).
    A chunk the user deleted stays deleted; a DNA chunk stays DNA whatever the new values say.
    """
    record = {
        "content": content,
        "memory_type": memory_type,
        "zone": zone,
        "importance": importance,
        "is_pinned": is_pinned,
        "tags": tags or [],
        "metadata": metadata or {},
    }
    try:
        parsed = protocol.validate_chunk(record, embedding_dim=0)
    except protocol.BundleError as exc:
        raise ValidationError(str(exc)) from exc
    if origin not in Origin.values:
        raise ValidationError(f"origin must be one of {', '.join(Origin.values)}")
    now = timezone.now()
    values = {
        "memory_type": parsed.memory_type,
        "zone": parsed.zone,
        "importance": parsed.importance,
        "is_pinned": parsed.is_pinned,
        "tags": parsed.tags,
        "metadata": parsed.metadata,
        "origin": origin,
        "valid_until": valid_until,
        "updated_at": now,
    }
    # order_by() keeps SQLite on the (team, content_hash) unique index.
    found = list(
        Chunk.objects.select_for_update()
        .filter(team=team, content_hash=parsed.content_hash)
        .order_by()[:1]
    )
    chunk = found[0] if found else None
    created = chunk is None
    if chunk is None:
        chunk = Chunk.objects.create(
            team=team,
            content=content,
            content_hash=parsed.content_hash,
            is_dna=parsed.is_dna,
            created_at=now,
            **values,
        )
    else:
        for name, value in values.items():
            setattr(chunk, name, value)
        chunk.is_dna = chunk.is_dna or parsed.is_dna
        chunk.save()
    if audit:
        audit_record(
            actor=actor,
            action="chunk.create" if created else "chunk.update",
            team=team,
            target=chunk,
            summary=f"{'Added' if created else 'Updated'} {memory_type} chunk ({origin})",
            data={"origin": origin, "content_hash": parsed.content_hash, "is_dna": chunk.is_dna},
        )
    return chunk, created


@transaction.atomic
def chunk_delete(*, chunk: Chunk, actor: Actor, automatic: bool) -> None:
    """A user's delete is a soft delete (never exported again). Automatic deletes spare DNA."""
    if automatic:
        if chunk.is_dna or protocol.is_dna(chunk.memory_type, chunk.zone, chunk.is_pinned):
            raise DnaProtectedError(f"chunk {chunk.pk} is DNA and cannot be deleted automatically")
        pk, team = chunk.pk, chunk.team
        chunk.delete()
        audit_record(
            actor=actor,
            action="chunk.delete",
            team=team,
            target_type="bundles.chunk",
            target_id=pk,
            summary=f"Automatically deleted chunk {pk}",
            data={"automatic": True},
        )
        return
    chunk.is_deleted, chunk.deleted_at, chunk.updated_at = True, timezone.now(), timezone.now()
    chunk.save(update_fields=["is_deleted", "deleted_at", "updated_at"])
    audit_record(
        actor=actor,
        action="chunk.delete",
        team=chunk.team,
        target=chunk,
        summary=f"Deleted chunk {chunk.pk} (kept as deleted, never exported)",
        data={"automatic": False},
    )


def _not_dna(team: Team):  # type: ignore[no-untyped-def]
    """Non-DNA chunks, checked on the flag and on the fields (belt and braces)."""
    return (
        Chunk.objects.filter(team=team, is_dna=False, is_pinned=False)
        .exclude(memory_type__in=protocol.DNA_TYPES)
        .exclude(zone__in=protocol.DNA_ZONES)
    )


@transaction.atomic
def chunk_decay(*, team: Team, actor: Actor, factor: float) -> int:
    """Maintenance: multiply decay_score by `factor` for every non-DNA chunk."""
    if not 0.0 <= factor <= 1.0:
        raise ValidationError("factor must be between 0 and 1")
    count = _not_dna(team).update(decay_score=F("decay_score") * factor)
    audit_record(
        actor=actor,
        action="chunk.decay",
        team=team,
        target_type="bundles.brain",
        target_id=team.pk,
        summary=f"Decayed {counted(count, 'chunk')} by {factor} (DNA spared)",
        data={"factor": factor, "count": count},
    )
    return count


@transaction.atomic
def chunks_expire(*, team: Team, actor: Actor, now: datetime | None = None) -> int:
    """Maintenance: delete non-DNA chunks whose valid_until has passed."""
    now = now or timezone.now()
    _, removed = _not_dna(team).filter(valid_until__lt=now).delete()
    count = removed.get(Chunk._meta.label, 0)
    audit_record(
        actor=actor,
        action="chunk.expire",
        team=team,
        target_type="bundles.brain",
        target_id=team.pk,
        summary=f"Expired {counted(count, 'chunk')} past valid_until (DNA spared)",
        data={"count": count},
    )
    return count


@transaction.atomic
def brain_settings_set(
    *, team: Team, actor: Actor, embedding_model: str, embedding_dim: int, reembed: bool = True
) -> BrainSettings:
    if len(embedding_model) > protocol.MAX_MODEL_CHARS or not 0 <= embedding_dim <= 65_536:
        raise ValidationError("embedding model or dimension out of range")
    before = BrainSettings.objects.filter(team=team).values_list("embedding_model", flat=True)
    changed = list(before) != [embedding_model]
    settings, _ = BrainSettings.objects.update_or_create(
        team=team,
        defaults={
            "embedding_model": embedding_model,
            "embedding_dim": embedding_dim,
            "updated_at": timezone.now(),
        },
    )
    audit_record(
        actor=actor,
        action="brain.settings",
        team=team,
        target=settings,
        summary=f"Embedding model set to {embedding_model or '(none)'}/{embedding_dim}",
        data={"embedding_model": embedding_model, "embedding_dim": embedding_dim},
    )
    if changed and reembed:  # the brain is re-embedded with the new model in the background
        from bundles.embeddings.queueing import brain_embed_queue

        brain_embed_queue(team_id=team.pk)
    return settings
