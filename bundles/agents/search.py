"""search_memory: hybrid search over the team's served memory.

Two signals over the same filtered chunks: keyword (PostgreSQL full text, SQLite FTS5;
`bundles.agents.ranking`) and meaning (nearest vectors of the team's model;
`bundles.agents.meaning`), fused by reciprocal rank fusion. Without the semantic extra, or for
a team whose model does not run here, it is keyword search alone (`ranking` says which).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import CharField, Exists, OuterRef, Q, QuerySet, Value
from django.db.models.functions import Cast, Concat, JSONObject
from django.utils import timezone

from bundles.agents.errors import AgentError
from bundles.agents.meaning import CANDIDATES, clean_vector, meaning_hits
from bundles.agents.ranking import fuse, keyword_hits, query_terms
from bundles.agents.readmodel import (
    FLAGGED,
    MAX_QUERY_CHARS,
    ORIGINS,
    active_origins_of,
    chunk_result,
    clean_limit,
    clean_list,
    clean_text,
    team_repository,
)
from bundles.context import UNTRUSTED_NOTE
from bundles.models import Chunk, ChunkOrigin
from bundles.provenance import with_origin_source
from bundles.selectors import active_origins, served_chunks
from formats.crosswalk import MEMORY_TYPES, SOURCE_TYPES
from formats.memoryai import CORE_TYPES
from memoryadmin.models import Team

# What `types` may name: MemoryRail types, OpenMemories kinds and MemoryAI memory types, each
# mapped to the brain's memory_type (gotcha and attempt are both `pitfall` there).
TYPE_FILTERS: dict[str, str] = {
    **{kind: memory_type for kind, (memory_type, _zone, _tags) in MEMORY_TYPES.items()},
    **{kind: memory_type for kind, (memory_type, _tags) in SOURCE_TYPES.items()},
    **{memory_type: memory_type for memory_type in CORE_TYPES},
    "x_constraint": "x_constraint",
}


def search_filters(
    *,
    team: Team,
    scopes: list[str],
    types: list[str],
    origins: list[str],
    repository_id: int | None,
    include_flagged: bool,
    now: datetime,
) -> QuerySet[Chunk]:
    """The served chunks the filters allow (before the keyword match)."""
    chunks = served_chunks(team, now)
    if not include_flagged:
        chunks = chunks.exclude(FLAGGED)
    if types:
        chunks = chunks.filter(memory_type__in=sorted({TYPE_FILTERS[t] for t in types}))
    if repository_id is not None and not origins:
        origins = ["repository"]
    if origins:
        wanted = Q(pk__in=[])
        if "brain" in origins:
            wanted |= Q(standalone=True)
        if "source" in origins:
            wanted |= Exists(active_origins(now=now).filter(kind="source"))
        if "repository" in origins:
            repo_origins = active_origins(now=now).filter(kind="repository")
            if repository_id is not None:
                repo_origins = repo_origins.filter(group=f"repository:{repository_id}")
            wanted |= Exists(repo_origins)
        chunks = chunks.filter(wanted)
    if scopes:
        from sources.selectors import context_records

        refs = (
            context_records(team, scopes, now)
            .order_by()
            .annotate(
                origin_ref=Concat(
                    Value("source:"),
                    Cast("source_id", CharField()),
                    Value(":"),
                    "record_id",
                    output_field=CharField(),
                )
            )
            .values("origin_ref")
        )
        in_scope = active_origins(now=now).filter(kind="source", ref__in=refs)
        not_source = Q(standalone=True) | Exists(active_origins(now=now).filter(kind="repository"))
        chunks = chunks.filter(not_source | Exists(in_scope))
    return chunks


RESULT_FIELDS = (
    "id",
    "content",
    "memory_type",
    "tags",
    "is_pinned",
    "suspicious",
    "secret_findings",
    "standalone",
    "origin",
)


def result_rows(ids: list[int], now: datetime) -> tuple[dict[int, Chunk], dict[int, list]]:
    """The results' chunks and their active origins (smallest ref first). PostgreSQL: one
    statement, the origins a JSON array subquery of each row; elsewhere two queries."""
    rows = Chunk.objects.filter(pk__in=ids).only(*RESULT_FIELDS)
    if connection.vendor != "postgresql":
        return {chunk.pk: chunk for chunk in rows}, active_origins_of(ids, now)
    from django.contrib.postgres.expressions import ArraySubquery

    origins = (
        with_origin_source(ChunkOrigin.objects.filter(chunk_id=OuterRef("pk"), active=True))
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .order_by("ref")
        .values(
            json=JSONObject(
                kind="kind",
                ref="ref",
                metadata="metadata",
                read_at="read_at",
                source_stale="source_stale",
            )
        )
    )
    by_id: dict[int, Chunk] = {}
    by_chunk: dict[int, list] = {}
    for chunk in rows.annotate(served_origins=ArraySubquery(origins)):
        by_id[chunk.pk] = chunk
        by_chunk[chunk.pk] = [_origin(chunk.pk, o) for o in chunk.served_origins or []]
    return by_id, by_chunk


def _origin(chunk_id: int, found: dict[str, Any]) -> ChunkOrigin:
    origin = ChunkOrigin(
        chunk_id=chunk_id, kind=found["kind"], ref=found["ref"], metadata=found["metadata"]
    )
    origin.read_at = found["read_at"]  # type: ignore[attr-defined]
    origin.source_stale = found["source_stale"]  # type: ignore[attr-defined]
    return origin


def search_memory(
    *,
    team: Team,
    query: Any,
    scopes: Any = None,
    types: Any = None,
    origins: Any = None,
    repository: Any = None,
    limit: Any = None,
    include_flagged: bool = False,
    vector: Any = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Ranked results over the team's served memory; raises AgentError on bad input.

    `query` (text) or `vector` (the team's model) or both: the text feeds the keyword signal
    (and the meaning one when no vector is given), the vector the meaning signal."""
    now = now or timezone.now()
    query_vector = clean_vector(team, vector)
    query = clean_text(
        query, field="query", max_chars=MAX_QUERY_CHARS, required=query_vector is None
    )
    scopes = clean_list(scopes, field="scope", max_items=20, max_chars=1000)
    types = clean_list(types, field="type", max_items=20, max_chars=64)
    unknown = sorted(set(types) - set(TYPE_FILTERS))
    if unknown:
        raise AgentError(
            400,
            "type-unknown",
            f"Unknown type: {', '.join(unknown)}.",
            {"unknown": unknown, "known": sorted(TYPE_FILTERS)},
        )
    origins = clean_list(origins, field="origin", max_items=3, max_chars=16)
    bad = sorted(set(origins) - set(ORIGINS))
    if bad:
        raise AgentError(
            400, "origin-unknown", f"origin is one of {', '.join(ORIGINS)}.", {"unknown": bad}
        )
    repo = team_repository(team, repository)
    limit = clean_limit(limit)
    chunks = search_filters(
        team=team,
        scopes=scopes,
        types=types,
        origins=origins,
        repository_id=repo.pk if repo is not None else None,
        include_flagged=include_flagged,
        now=now,
    )
    depth = max(limit, CANDIDATES)
    signals = {"keyword": keyword_hits(chunks, query, depth) if query else []}
    meaning, why_not = meaning_hits(team, chunks, text=query, vector=query_vector, limit=depth)
    if not why_not:
        signals["meaning"] = meaning
    ranked = fuse(signals)[:limit]
    ids = [pk for pk, _, _ in ranked]
    by_id, origins_by_chunk = result_rows(ids, now)
    terms = query_terms(query)
    results = []
    for position, (pk, fused, per) in enumerate(ranked, 1):
        chunk = by_id.get(pk)
        if chunk is None:  # deleted between the two reads
            continue
        item = chunk_result(chunk, origins_by_chunk.get(pk, []))
        lowered = chunk.content.lower()
        # The keyword score when the words matched, else the meaning signal's similarity.
        item["score"] = round((per.get("keyword") or per["meaning"]).score, 6)
        item["rank"] = position
        item["signals"] = {
            name: {"rank": hit.rank, "score": round(hit.score, 6)} for name, hit in per.items()
        }
        item["fused_score"] = round(fused, 6)
        item["matched"] = [t for t in terms if t in lowered][:20]
        item["matched_by"] = "both" if len(per) > 1 else next(iter(per))
        results.append(item)
    return {
        "note": UNTRUSTED_NOTE,
        "query": query,
        "count": len(results),
        "results": results,
        "ranking": "hybrid" if "meaning" in signals else "keyword",
        **({"keyword_only_because": why_not} if why_not else {}),
    }
