"""search_memory: keyword search over the team's served memory, ranked in the database.

PostgreSQL: the chunk's stored `search_vector` (migration bundles/0007, GIN index) matched with
`websearch_to_tsquery('english', q)` and ranked by `ts_rank_cd(…, 32)` (0..1). SQLite: the FTS5
table `bundles_chunk_fts` matched with the same query translated to FTS5 syntax and ranked by
`bm25` (negated, so higher is better). Both take the query the way web search boxes do: words
(all must match), "quoted phrases", `or` between words, `-word` to exclude.

Each signal returns *ranks*, not only scores: `fuse` combines one or more ranked lists by
reciprocal rank fusion, so a second signal (vector recall, issue #16) is one more list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import (
    BooleanField,
    CharField,
    Exists,
    FloatField,
    Q,
    QuerySet,
    Value,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from bundles.agents.errors import AgentError
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
from bundles.models import Chunk
from bundles.selectors import active_origins, served_chunks
from formats.crosswalk import MEMORY_TYPES, SOURCE_TYPES
from formats.memoryai import CORE_TYPES
from memoryadmin.models import Team

RRF_K = 60  # reciprocal rank fusion: score = sum(1 / (RRF_K + rank)) over the signals
MAX_TERMS = 64

# What `types` may name: MemoryRail types, OpenMemories kinds and MemoryAI memory types, each
# mapped to the brain's memory_type (gotcha and attempt are both `pitfall` there).
TYPE_FILTERS: dict[str, str] = {
    **{kind: memory_type for kind, (memory_type, _zone, _tags) in MEMORY_TYPES.items()},
    **{kind: memory_type for kind, (memory_type, _tags) in SOURCE_TYPES.items()},
    **{memory_type: memory_type for memory_type in CORE_TYPES},
    "x_constraint": "x_constraint",
}

# Words too common to say what a plan is about (SQLite; PostgreSQL's english configuration
# drops its own list).
STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "we",
        "our",
        "you",
        "your",
        "i",
        "me",
        "my",
        "not",
        "no",
        "so",
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "may",
        "might",
        "must",
        "all",
        "any",
        "each",
        "some",
        "such",
        "than",
        "too",
        "very",
        "just",
        "also",
        "only",
        "about",
        "over",
        "under",
        "after",
        "before",
        "when",
        "where",
        "which",
        "who",
        "what",
        "how",
        "why",
        "use",
        "using",
        "used",
        "make",
    }
)

_TOKEN = re.compile(r'"([^"]*)"?|(\S+)')
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Hit:
    chunk_id: int
    score: float
    rank: int  # 1-based position in this signal's list


def query_terms(text: str) -> list[str]:
    """The distinct lowercased words of a text (for `matched` and precheck's any-word query)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        seen.setdefault(word, None)
    return list(seen)


def fts5_query(text: str) -> str:
    """The web-search query as an FTS5 expression (every word quoted: no syntax injection)."""
    parts: list[str] = []
    negated: list[str] = []
    pending_or = False
    for match in _TOKEN.finditer(text):
        phrase, bare = match.group(1), match.group(2)
        negate = False
        if bare is not None:
            if bare.lower() == "or":
                pending_or = bool(parts)
                continue
            if bare.startswith("-") and len(bare) > 1:
                negate, bare = True, bare[1:]
            words = _WORD.findall(bare)
        else:
            words = _WORD.findall(phrase or "")
        if not words:
            continue
        item = '"' + " ".join(w.replace('"', '""') for w in words) + '"'
        if negate:
            negated.append(item)
            continue
        if parts:
            parts.append("OR" if pending_or else "AND")
        parts.append(item)
        pending_or = False
    if not parts:
        return ""
    return " ".join(parts + [f"NOT {item}" for item in negated])


def any_word_query(text: str) -> str:
    """A query matching any significant word of a free text (precheck's plan)."""
    terms = [t for t in query_terms(text) if len(t) > 2 and t not in STOPWORDS][:MAX_TERMS]
    return " or ".join(terms)


def keyword_match(queryset: QuerySet[Chunk], query: str) -> QuerySet[Chunk] | None:
    """Chunks matching a web-search query, annotated with `keyword_score` (higher is better);
    None when the query has no word to look for."""
    if connection.vendor == "postgresql":
        if not _WORD.search(query):
            return None
        tsquery = "websearch_to_tsquery('english'::regconfig, %s)"
        return (
            queryset.annotate(
                keyword_hit=RawSQL(  # noqa: S611 (constant SQL, the query is a parameter)
                    f"bundles_chunk.search_vector @@ {tsquery}", [query], BooleanField()
                )
            )
            .filter(keyword_hit=True)
            .annotate(
                keyword_score=RawSQL(  # noqa: S611 (constant SQL, the query is a parameter)
                    f"ts_rank_cd(bundles_chunk.search_vector, {tsquery}, 32)",
                    [query],
                    FloatField(),
                )
            )
        )
    expression = fts5_query(query)
    if not expression:
        return None
    return queryset.filter(
        id__in=RawSQL(
            "SELECT rowid FROM bundles_chunk_fts WHERE bundles_chunk_fts MATCH %s", [expression]
        )
    ).annotate(
        keyword_score=RawSQL(
            "(SELECT -bm25(bundles_chunk_fts) FROM bundles_chunk_fts "
            "WHERE bundles_chunk_fts MATCH %s AND rowid = bundles_chunk.id)",
            [expression],
            FloatField(),
        )
    )


def keyword_hits(queryset: QuerySet[Chunk], query: str, limit: int) -> list[Hit]:
    """The keyword signal: the best `limit` chunks with their score and rank."""
    matched = keyword_match(queryset, query)
    if matched is None:
        return []
    rows = matched.order_by("-keyword_score", "-id").values_list("id", "keyword_score")[:limit]
    return [
        Hit(chunk_id=pk, score=float(score or 0.0), rank=n) for n, (pk, score) in enumerate(rows, 1)
    ]


def fuse(signals: dict[str, list[Hit]]) -> list[tuple[int, float, dict[str, Hit]]]:
    """Reciprocal rank fusion of ranked lists: (chunk id, fused score, hit per signal), best
    first. One signal keeps its order exactly."""
    fused: dict[int, tuple[float, dict[str, Hit]]] = {}
    for name, hits in signals.items():
        for hit in hits:
            score, per = fused.get(hit.chunk_id, (0.0, {}))
            per[name] = hit
            fused[hit.chunk_id] = (score + 1.0 / (RRF_K + hit.rank), per)
    order = sorted(fused.items(), key=lambda item: (-item[1][0], -item[0]))
    return [(pk, score, per) for pk, (score, per) in order]


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
    now: datetime | None = None,
) -> dict[str, Any]:
    """Ranked results over the team's served memory; raises AgentError on bad input."""
    now = now or timezone.now()
    query = clean_text(query, field="query", max_chars=MAX_QUERY_CHARS)
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
    ranked = fuse({"keyword": keyword_hits(chunks, query, limit)})[:limit]
    ids = [pk for pk, _, _ in ranked]
    by_id = {
        chunk.pk: chunk
        for chunk in Chunk.objects.filter(pk__in=ids).only(
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
    }
    origins_by_chunk = active_origins_of(ids, now)
    terms = query_terms(query)
    results = []
    for position, (pk, fused, per) in enumerate(ranked, 1):
        chunk = by_id.get(pk)
        if chunk is None:  # deleted between the two reads
            continue
        item = chunk_result(chunk, origins_by_chunk.get(pk, []))
        lowered = chunk.content.lower()
        item["score"] = round(per["keyword"].score, 6)
        item["rank"] = position
        item["signals"] = {
            name: {"rank": hit.rank, "score": round(hit.score, 6)} for name, hit in per.items()
        }
        item["fused_score"] = round(fused, 6)
        item["matched"] = [t for t in terms if t in lowered][:20]
        results.append(item)
    return {
        "note": UNTRUSTED_NOTE,
        "query": query,
        "count": len(results),
        "results": results,
        "ranking": "keyword",
    }
