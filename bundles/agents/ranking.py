"""The ranking under search_memory: keyword matching in the database, and the fusion.

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

from django.db import connection
from django.db.models import BooleanField, FloatField, QuerySet
from django.db.models.expressions import RawSQL

from bundles.models import Chunk

RRF_K = 60  # reciprocal rank fusion: score = sum(1 / (RRF_K + rank)) over the signals
MAX_TERMS = 64

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


def has_word(query: str) -> bool:
    """Whether a query has a word the keyword index can look for (keyword_match's test)."""
    return bool(_WORD.search(query))


def any_word_query(text: str) -> str:
    """A query matching any significant word of a free text (precheck's plan)."""
    terms = [t for t in query_terms(text) if len(t) > 2 and t not in STOPWORDS][:MAX_TERMS]
    return " or ".join(terms)


def keyword_match(queryset: QuerySet[Chunk], query: str) -> QuerySet[Chunk] | None:
    """Chunks matching a web-search query, annotated with `keyword_score` (higher is better);
    None when the query has no word to look for."""
    if connection.vendor == "postgresql":
        if not has_word(query):
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
