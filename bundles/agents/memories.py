"""get_memory: one served memory by the ref an agent was given, with its provenance.

Accepted refs: a MemoryRail short ref (`DEC-a3f9`), a MemoryRail id (`20261010-use-drizzle`),
a repository ref (`repository:<id>:<memory id>`), a source ref (`source:<id>:<record id>`) and a
brain ref (`brain:<chunk id>`, a standalone chunk). Only served memory is found: active
repository memories, active unexpired records of approved non-denied sources, served chunks.
A short ref or id that two memories share is reported with its candidates, never guessed.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django.utils import timezone

from bundles.agents.errors import AgentError
from bundles.agents.readmodel import (
    FLAGGED,
    active_origins_of,
    chunk_result,
    clean_text,
    team_repository,
)
from bundles.context import UNTRUSTED_NOTE, context_memory
from bundles.selectors import served_chunks
from formats.memoryrail import is_ref
from memoryadmin.models import Team
from reviews.models import Memory, MemoryStatus
from reviews.selectors import memory_provenance

MEMORY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")
SOURCE_REF = re.compile(r"^source:(\d{1,18}):(.{1,500})$", re.DOTALL)
REPOSITORY_REF = re.compile(r"^repository:(\d{1,18}):(.{1,255})$", re.DOTALL)
BRAIN_REF = re.compile(r"^brain:(\d{1,18})$")
REF_SHAPES = (
    "a short ref (DEC-a3f9), a MemoryRail id, repository:<id>:<memory id>, "
    "source:<id>:<record id> or brain:<chunk id>"
)


def get_memory(
    *,
    team: Team,
    ref: Any,
    repository: Any = None,
    include_flagged: bool = False,
    now: datetime | None = None,
) -> dict[str, Any]:
    now = now or timezone.now()
    ref = clean_text(ref, field="ref", max_chars=600)
    repo = team_repository(team, repository)
    if match := SOURCE_REF.match(ref):
        return _envelope(_source_record(team, int(match.group(1)), match.group(2), now))
    if match := REPOSITORY_REF.match(ref):
        memories = _memories(team, repo).filter(
            repository_id=int(match.group(1)), memory_id=match.group(2)
        )
        return _envelope(_one_memory(ref, list(memories)))
    if match := BRAIN_REF.match(ref):
        return _envelope(_brain_chunk(team, int(match.group(1)), include_flagged, now))
    if is_ref(ref):
        memories = list(_memories(team, repo).filter(ref=ref))
        return _envelope(_one_memory(ref, memories))
    if MEMORY_ID.match(ref):
        memories = list(_memories(team, repo).filter(memory_id=ref))
        return _envelope(_one_memory(ref, memories))
    raise AgentError(400, "ref-invalid", f"A ref is {REF_SHAPES}.", {"ref": ref[:100]})


def _envelope(item: dict[str, Any]) -> dict[str, Any]:
    return {"note": UNTRUSTED_NOTE, "memory": item}


def _memories(team: Team, repo: Any) -> Any:
    memories = Memory.objects.filter(team=team, status=MemoryStatus.ACTIVE).select_related(
        "repository"
    )
    return memories.filter(repository=repo) if repo is not None else memories


def _one_memory(ref: str, memories: list[Memory]) -> dict[str, Any]:
    if not memories:
        raise AgentError(404, "not-found", f"No served memory has the ref {ref}.", {"ref": ref})
    if len(memories) > 1:
        raise AgentError(
            409,
            "ref-ambiguous",
            f"{ref} names {len(memories)} memories; ask again with one of the candidates' refs.",
            {
                "candidates": [
                    {
                        "ref": f"repository:{m.repository_id}:{m.memory_id}",
                        "id": m.memory_id,
                        "repository": m.repository.name,
                        "title": m.title,
                    }
                    for m in memories
                ]
            },
        )
    memory = memories[0]
    item = context_memory(memory, memory_provenance(memory.repository, [memory])[memory.memory_id])
    item["cite"] = f"[per {memory.ref}]"
    item["links"] = (memory.front_matter or {}).get("links") or []
    return item


def _source_record(team: Team, source_id: int, record_id: str, now: datetime) -> dict[str, Any]:
    from sources.selectors import context_records
    from sources.serializers import ContextRecordSerializer

    record = context_records(team, None, now).filter(source_id=source_id, record_id=record_id)
    found = record.first()
    ref = f"source:{source_id}:{record_id}"
    if found is None:
        raise AgentError(404, "not-found", "No served record has this ref.", {"ref": ref})
    row = dict(ContextRecordSerializer(found).data)
    return {"origin": "source", "ref": ref, "cite": f"[per {ref}]", **row}


def _brain_chunk(team: Team, chunk_id: int, include_flagged: bool, now: datetime) -> dict:
    chunks = served_chunks(team, now).filter(pk=chunk_id)
    if not include_flagged:
        chunks = chunks.exclude(FLAGGED)
    chunk = chunks.first()
    if chunk is None:
        ref = f"brain:{chunk_id}"
        raise AgentError(404, "not-found", "No served chunk has this ref.", {"ref": ref})
    origins = active_origins_of([chunk.pk], now).get(chunk.pk, [])
    return chunk_result(chunk, origins)
