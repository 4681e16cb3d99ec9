"""precheck's read on PostgreSQL as one raw, prepared statement: the plan's text match (the
best TEXT_DEPTH mirrored chunks and their repository refs), the candidate memories that may be
pinned, may link to a changed path or matched the plan, each with the count of the team's
memories sharing its short ref and its provenance (the latest pushed approval, if any) — all
folded into the answer's rows.

Why raw SQL: the ORM compiled three querysets per request (~40 % of a precheck's CPU in the
profile), and each was its own round trip. The statement text depends only on which parts are
present (a plan, paths, a repository), so there are eight texts and psycopg prepares each on
the server after a few uses (server-side binding, `prepare_threshold`).

The SQL only narrows: precheck.py's rule in Python (link_applies, pinned, the order) still
decides every row it returns. The provenance here is reviews.selectors.memory_provenance's
rule in SQL (tests/agents/test_precheck_provenance.py compares the two).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from django.db import connection
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper

# The memory types precheck's kinds are mirrored as (bundles.agents.precheck.text_chunks).
TEXT_TYPES = ("x_constraint", "pitfall", "decision")
KINDS = ("constraint", "attempt", "gotcha", "decision")

# The text match: the best `depth` served chunks mirrored from repository memories, ranked
# as keyword_match ranks (ts_rank_cd, then the newest id), then each chunk's active repository
# refs, split into (repository id, memory id); a key keeps its first place (chunk rank, then
# the ref in code-point order, as Python sorts it) and that chunk's score.
_HITS = """
hits AS (
    SELECT c.id, ts_rank_cd(c.search_vector, q.tsq, 32) AS score
    FROM bundles_chunk c, websearch_to_tsquery('english'::regconfig, %(query)s) AS q(tsq)
    WHERE c.team_id = %(team)s AND NOT c.is_deleted
      AND c.memory_type IN ('x_constraint', 'pitfall', 'decision')
      AND c.search_vector @@ q.tsq
      AND EXISTS (
          SELECT 1 FROM bundles_chunkorigin o
          WHERE o.chunk_id = c.id AND o.active AND o.kind = 'repository'
            AND (o.expires_at IS NULL OR o.expires_at > %(now)s){origin_repo}
      )
    ORDER BY score DESC, c.id DESC
    LIMIT %(depth)s
),
ranked AS (
    SELECT id, score, row_number() OVER (ORDER BY score DESC, id DESC) AS rank FROM hits
),
hit_keys AS (
    SELECT DISTINCT ON (repository_id, memory_id) repository_id, memory_id, score, rank, ref
    FROM (
        SELECT split_part(o.ref, ':', 2)::bigint AS repository_id,
               substring(o.ref FROM '^[^:]*:[^:]*:(.*)$') AS memory_id,
               r.score, r.rank, o.ref
        FROM ranked r JOIN bundles_chunkorigin o
          ON o.chunk_id = r.id AND o.active AND o.kind = 'repository'
    ) refs
    ORDER BY repository_id, memory_id, rank, ref COLLATE "C"
),"""


def irregular_links(table: str) -> str:
    """The memories of `table` holding a link that normpath would change (a `.` or `..`
    segment, `//`, a trailing `/`), or `.`: always read and checked in Python. The one text
    of this predicate: precheck.IRREGULAR_LINKS and the partial index of migration
    bundles/0011 are it for `reviews_memory`."""
    return (
        f"jsonb_path_exists({table}.front_matter, "
        "'$.links[*] ? (@ like_regex \"(^|/)\\\\.\\\\.?(/|$)|//|/$\")')"
    )


_IRREGULAR = irregular_links("m")

_LINK_MATCH = f"\n        OR (m.front_matter -> 'links') ?| %(paths)s::text[] OR {_IRREGULAR}"

_ROWS = """
candidates AS (
    SELECT m.id, m.repository_id, m.memory_id, m.ref, m.type, m.title, m.path,
           m.front_matter, m.body, m.updated, m.author_name, m.added_commit,
           {hit_columns}
    FROM reviews_memory m{hit_join}
    WHERE m.team_id = %(team)s AND m.status = 'active'
      AND m.type IN ('constraint', 'attempt', 'gotcha', 'decision'){memory_repo}
      AND ((m.type = 'constraint' AND m.front_matter ? 'pinned'){link_match}{hit_match})
),
approvals AS (
    SELECT DISTINCT ON (d.repository_id, i.memory_key)
           d.repository_id, i.memory_key, d.actor_label, d.commit_sha
    FROM reviews_decisionitem i
    JOIN reviews_decision d ON d.id = i.decision_id
    JOIN candidates c ON c.repository_id = d.repository_id AND c.memory_id = i.memory_key
    WHERE d.kind = 'approve' AND d.state = 'pushed'
    ORDER BY d.repository_id, i.memory_key, i.decision_id DESC
)
SELECT c.id, c.repository_id, c.memory_id, c.ref, c.type, c.title, c.path, c.front_matter,
       c.body, c.updated, c.author_name, c.added_commit,
       (SELECT count(*) FROM reviews_memory u WHERE u.team_id = %(team)s AND u.ref = c.ref),
       r.name, a.actor_label, a.commit_sha, c.hit_score, c.hit_rank, c.hit_ref
FROM candidates c
JOIN reviews_repository r ON r.id = c.repository_id
LEFT JOIN approvals a ON a.repository_id = c.repository_id AND a.memory_key = c.memory_id
ORDER BY c.id
"""


@lru_cache(maxsize=8)
def statement(*, text: bool, paths: bool, repository: bool) -> str:
    """The statement's text for which parts are present: one of eight, each prepared once
    per connection. Parameters (by name): team, now, query, depth, paths, repository."""
    parts = ["WITH"]
    if text:
        parts.append(
            _HITS.format(
                origin_repo=" AND o.\"group\" = 'repository:' || %(repository)s"
                if repository
                else ""
            )
        )
    parts.append(
        _ROWS.format(
            hit_columns="k.score AS hit_score, k.rank AS hit_rank, k.ref AS hit_ref"
            if text
            else "NULL::real AS hit_score, NULL::bigint AS hit_rank, NULL::text AS hit_ref",
            hit_join=" LEFT JOIN hit_keys k"
            " ON k.repository_id = m.repository_id AND k.memory_id = m.memory_id"
            if text
            else "",
            memory_repo=" AND m.repository_id = %(repository)s" if repository else "",
            link_match=_LINK_MATCH if paths else "",
            hit_match="\n        OR k.memory_id IS NOT NULL" if text else "",
        )
    )
    return "".join(parts)


@dataclass(slots=True)
class Row:
    """One candidate memory as precheck's rule reads it (the attributes it reads of a
    Memory), with its provenance and its text hit (score, place) when the plan matched it."""

    pk: int
    repository_id: int
    memory_id: str
    ref: str
    type: str
    title: str
    path: str
    front_matter: dict[str, Any]
    body: str
    updated: str
    author_name: str
    added_commit: str
    ref_count: int
    repository_name: str
    approved_by: str | None
    approval_commit: str | None
    hit_score: float | None
    hit_rank: int | None
    hit_ref: str | None

    def provenance(self) -> dict[str, Any]:
        """reviews.selectors.memory_provenance's answer for this memory."""
        if self.approved_by is not None:
            return {
                "commit": self.approval_commit,
                "approved_by": self.approved_by,
                "approval": "review",
            }
        return {"commit": self.added_commit, "approved_by": self.author_name, "approval": "commit"}


def answer_rows(
    *,
    team_id: int,
    repository_id: int | None,
    paths: list[str],
    query: str,
    depth: int,
    now: datetime,
) -> list[Row]:
    """The candidate rows of one precheck, in id order, in one round trip. `paths` are the
    changed paths and every directory above them (precheck.path_ancestors); `query` the
    plan's any-word query ("" for none)."""
    sql = statement(text=bool(query), paths=bool(paths), repository=repository_id is not None)
    params = {
        "team": team_id,
        "now": now,
        "query": query,
        "depth": depth,
        "paths": paths,
        "repository": repository_id,
    }
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [_row(values) for values in rows]


def _row(values: tuple[Any, ...]) -> Row:
    """A statement row as a Row (its columns are Row's fields, in order)."""
    row = Row(*values)
    if isinstance(row.front_matter, str):  # jsonb arrives as text through a raw cursor
        row.front_matter = json.loads(row.front_matter)
    row.front_matter = row.front_matter or {}
    row.ref_count = int(row.ref_count)
    if row.hit_score is not None:
        row.hit_score = float(row.hit_score)
    return row


def prepared_cursor() -> CursorWrapper:
    """A cursor with server-side binding on Django's own connection (so psycopg prepares a
    statement sent often), wrapped as Django wraps its cursors: it runs in the request's
    transaction and shows in connection.queries and the query-count tests."""
    import psycopg

    connection.ensure_connection()
    raw = psycopg.Cursor(connection.connection)
    wrapper = CursorDebugWrapper if connection.queries_logged else CursorWrapper
    return wrapper(raw, connection)
