"""precheck (MemoryRail 1, "Precheck"): given a plan and/or the files about to change, the
active `constraint`, `attempt`, `gotcha` and `decision` memories that apply, most binding first.

A memory applies when it is a pinned constraint, when one of its `links` is a changed path or a
directory containing it, or when its text matches the plan (any significant word of the plan,
through the keyword index). Order: pinned constraints, constraints, attempts, gotchas,
decisions; within a kind a link match before a text match, then the text score, then the id.
Only `active` memories: proposed, superseded, archived and resolved ones never apply.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from datetime import datetime
from functools import lru_cache
from typing import Any

from django.db import connection
from django.db.models import BooleanField, Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.expressions import RawSQL
from django.utils import timezone

from bundles.agents import precheck_sql
from bundles.agents.errors import AgentError
from bundles.agents.ranking import any_word_query, has_word, keyword_hits
from bundles.agents.readmodel import clean_list, clean_text, team_repository
from bundles.context import UNTRUSTED_NOTE
from bundles.models import ChunkOrigin
from bundles.selectors import active_origins, served_chunks
from formats.memoryrail.fields import check_link
from memoryadmin.models import Team
from reviews.models import Memory, MemoryStatus, Repository
from reviews.selectors import memory_pinned, memory_provenance, memory_tags

KIND_ORDER = ("constraint", "attempt", "gotcha", "decision")
MAX_PLAN_CHARS = 10_000
MAX_PATHS = 200
MAX_TEXT_MATCHES = 20
TEXT_DEPTH = MAX_TEXT_MATCHES * 3  # chunks read to find MAX_TEXT_MATCHES memories
INSTRUCTION = (
    "Cite each memory you rely on as [per REF]. If your plan conflicts with a constraint or a "
    "decision below, stop and ask the user before going on. If an attempt below describes what "
    "you are about to do, do not retry it without a new reason. When an approach fails, "
    "propose an `attempt` memory so nobody retries it."
)


def clean_paths(value: Any) -> list[str]:
    """Repo-relative POSIX paths, normalised; a path that escapes the repository is refused."""
    paths = clean_list(value, field="paths", max_items=MAX_PATHS, max_chars=1000)
    cleaned = []
    for path in paths:
        problem = check_link(path)
        if problem is not None:
            raise AgentError(
                400,
                problem if problem == "link-outside-repo" else "path-invalid",
                "paths must be repo-relative POSIX paths inside the repository.",
                {"path": path},
            )
        cleaned.append(posixpath.normpath(path))
    return cleaned


def memory_links(memory: Memory) -> list[str]:
    return valid_links((memory.front_matter or {}).get("links"))


def valid_links(links: Any) -> list[str]:
    """The links of a memory's front matter that stay inside the repository."""
    if isinstance(links, str):
        links = [links]
    if not isinstance(links, list):
        return []
    return [link for link in links if isinstance(link, str) and _inside(link)]


@lru_cache(maxsize=4096)
def _inside(link: str) -> bool:
    return check_link(link) is None


def link_applies(link: str, path: str) -> bool:
    """The link is the path, or a directory containing it (never a sibling file)."""
    link = _normalised(link)
    return link == "." or path == link or path.startswith(link + "/")


@lru_cache(maxsize=4096)
def _normalised(link: str) -> str:
    return posixpath.normpath(link).rstrip("/")


ANSWER_FIELDS = (
    "id",
    "memory_id",
    "ref",
    "type",
    "title",
    "body",
    "front_matter",
    "path",
    "repository__id",
    "repository__name",
    "added_commit",
    "author_name",
    "updated",
)


def candidate_memories(team: Team, repo: Repository | None) -> QuerySet[Memory]:
    """The memories precheck may return: the team's active ones of the four kinds (in `repo`
    when given)."""
    memories = Memory.objects.filter(team=team, status=MemoryStatus.ACTIVE, type__in=KIND_ORDER)
    if repo is not None:
        memories = memories.filter(repository=repo)
    return memories


# The links the SQL cannot compare as written; the same text is the predicate of the partial
# index of migration bundles/0011, so the planner can use it.
IRREGULAR_LINKS = precheck_sql.irregular_links("reviews_memory")
LINK_MATCH = f"((reviews_memory.front_matter -> 'links') ?| %s::text[] OR {IRREGULAR_LINKS})"


def path_ancestors(paths: list[str]) -> list[str]:
    """Each path and every directory above it: the links that apply to the paths, as written
    in normalised form (`src/a/b.py` -> `src`, `src/a`, `src/a/b.py`)."""
    found: dict[str, None] = {}
    for path in paths:
        parts = path.split("/")
        for end in range(1, len(parts) + 1):
            found.setdefault("/".join(parts[:end]), None)
    return list(found)


def linked_memories(team: Team, repo: Repository | None, paths: list[str]) -> QuerySet:
    """The narrow read that finds pinned and linked memories: (id, type, links, pinned) of the
    candidates that may be pinned or, when paths are given, may link to one of them; only the
    two front-matter keys leave the database, not the bodies.

    PostgreSQL matches the links in SQL: `front_matter -> 'links' ?| <the paths and their
    directories>` through a GIN index (migration bundles/0011), plus the few irregular links
    (IRREGULAR_LINKS); the caller still applies link_applies to what comes back, so the rule
    stays the one in Python. Elsewhere every candidate with links is read and checked."""
    memories, maybe = _maybe_linked(candidate_memories(team, repo), paths)
    return (
        memories.filter(maybe)
        .order_by()
        .values_list("id", "type", "front_matter__links", "front_matter__pinned")
    )


def _maybe_linked(memories: QuerySet[Memory], paths: list[str]) -> tuple[QuerySet[Memory], Q]:
    """The memories that may be pinned or link to one of `paths`, as a filter (PostgreSQL:
    the `?|` match of LINK_MATCH; elsewhere every memory with links)."""
    maybe = Q(type="constraint", front_matter__has_key="pinned")
    if paths and connection.vendor == "postgresql":
        memories = memories.alias(
            link_hit=RawSQL(  # noqa: S611 (constant SQL, the paths are a parameter)
                LINK_MATCH, [path_ancestors(paths)], output_field=BooleanField()
            )
        )
        maybe |= Q(link_hit=True)
    elif paths:
        maybe |= Q(front_matter__has_key="links")
    return memories, maybe


def precheck(
    *,
    team: Team,
    plan: Any = None,
    paths: Any = None,
    repository: Any = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    now = now or timezone.now()
    plan = clean_text(plan, field="plan", max_chars=MAX_PLAN_CHARS, required=False)
    paths = clean_paths(paths)
    if not plan and not paths:
        raise AgentError(400, "plan-required", "Give a plan, paths, or both.")
    repo = team_repository(team, repository)
    candidates, hits = precheck_candidates(
        team, repo, plan, paths, now, raw=connection.vendor == "postgresql"
    )
    return precheck_answer(candidates, hits, plan, paths)


def precheck_answer(
    candidates: list[Any], hits: dict[tuple[int, str], float], plan: str, paths: list[str]
) -> dict[str, Any]:
    """The rule, in Python, decides every row the SQL narrowed to: why each applies, the
    order, the answer."""
    why: dict[int, list[dict[str, Any]]] = {}
    for memory in candidates:
        reasons: list[dict[str, Any]] = []
        if memory.type == "constraint" and memory_pinned(memory):
            reasons.append({"reason": "pinned"})
        for link in memory_links(memory):
            for path in paths:
                if link_applies(link, path):
                    reasons.append({"reason": "link", "link": link, "path": path})
        if reasons:
            why[memory.pk] = reasons
    text_score: dict[int, float] = {}
    by_key = {(m.repository_id, m.memory_id): m for m in candidates}
    terms = any_word_query(plan).split(" or ") if plan else []
    for key, score in hits.items():
        memory = by_key.get(key)
        if memory is None or memory.pk in text_score or len(text_score) >= MAX_TEXT_MATCHES:
            continue
        text = f"{memory.title}\n{memory.body}".lower()
        why.setdefault(memory.pk, []).append(
            {"reason": "text", "matched": [t for t in terms if t in text][:20]}
        )
        text_score[memory.pk] = score
    applying = [m for m in candidates if m.pk in why]
    applying.sort(key=lambda m: _order(m, why[m.pk], text_score.get(m.pk, 0.0)))
    provenance = _provenance(applying)
    items = [_item(m, why[m.pk], *provenance[n]) for n, m in enumerate(applying)]
    return {
        "note": UNTRUSTED_NOTE,
        "instruction": INSTRUCTION,
        "count": len(items),
        "conflict_check": [i["cite"] for i in items if i["type"] in ("constraint", "decision")],
        "memories": items,
    }


def precheck_candidates(
    team: Team,
    repo: Repository | None,
    plan: str,
    paths: list[str],
    now: datetime,
    *,
    raw: bool,
) -> tuple[list[Any], dict[tuple[int, str], float]]:
    """The rows the rule decides, and the plan's text hits ((repository id, memory id) ->
    score, best first). `raw` (PostgreSQL): precheck_sql's one prepared statement, the
    provenance folded into the rows. Otherwise the ORM's statements (what SQLite runs; on
    PostgreSQL the test that compares the two runs them too)."""
    if not raw:
        hits = _text_hits(team, plan, repo, now) if plan else {}
        return list(candidate_rows(team, repo, paths, hits)), hits
    rows = precheck_sql.answer_rows(
        team_id=team.pk,
        repository_id=repo.pk if repo is not None else None,
        paths=path_ancestors(paths),
        query=_plan_query(plan),
        depth=TEXT_DEPTH,
        now=now,
    )
    ranked = sorted(
        (row for row in rows if row.hit_rank is not None),
        key=lambda row: (row.hit_rank, row.hit_ref),
    )
    return rows, {(row.repository_id, row.memory_id): row.hit_score or 0.0 for row in ranked}


def _provenance(applying: list[Any]) -> list[tuple[dict[str, Any], str]]:
    """(provenance, repository name) of each applying memory: folded into its row on
    PostgreSQL (precheck_sql.Row), reviews.selectors.memory_provenance per repository else."""
    if all(isinstance(m, precheck_sql.Row) for m in applying):
        return [(m.provenance(), m.repository_name) for m in applying]
    provenance: dict[tuple[int, str], dict[str, Any]] = {}
    groups: dict[int, list[Memory]] = {}
    for memory in applying:
        groups.setdefault(memory.repository_id, []).append(memory)
    for group in groups.values():
        for key, value in memory_provenance(group[0].repository, group).items():
            provenance[(group[0].repository_id, key)] = value
    return [(provenance[(m.repository_id, m.memory_id)], m.repository.name) for m in applying]


def _item(
    memory: Any, why: list[dict[str, Any]], provenance: dict[str, Any], repository: str
) -> dict[str, Any]:
    ambiguous = memory.ref_count > 1  # two of the team's memories share it: cite by id
    return {
        "ref": memory.ref,
        "ref_ambiguous": ambiguous,
        "cite": f"[per {memory.memory_id if ambiguous else memory.ref}]",
        "id": memory.memory_id,
        "type": memory.type,
        "pinned": memory_pinned(memory),
        "title": memory.title,
        "body": memory.body,
        "tags": memory_tags(memory),
        "links": memory_links(memory),
        "why": why,
        "repository": repository,
        "provenance": {
            "origin": "repository",
            "ref": f"repository:{memory.repository_id}:{memory.memory_id}",
            "repository": repository,
            "repository_id": memory.repository_id,
            "memory_id": memory.memory_id,
            "memory_ref": memory.ref,
            "path": memory.path,
            "updated": memory.updated,
            **provenance,
        },
    }


def candidate_rows(
    team: Team, repo: Repository | None, paths: list[str], hits: dict[tuple[int, str], float]
) -> QuerySet[Memory]:
    """The answer's rows through the ORM (SQLite; precheck_sql on PostgreSQL): the candidates
    that may be pinned, may link to one of the paths, or matched the plan's words (`hits`),
    with what the answer shows and how many of the team's memories share each one's short ref
    (`ref_count`). The narrow read of linked_memories runs first, so the bodies of every
    memory with links never leave the database; its rows are then checked by the same rule."""
    memories = candidate_memories(team, repo)
    wanted = Q(pk__in=_may_apply(linked_memories(team, repo, paths), paths))
    if hits:
        wanted |= Q(memory_id__in=sorted({memory_id for _, memory_id in hits}))
    same_ref = (
        Memory.objects.filter(team=team, ref=OuterRef("ref"))
        .order_by()
        .values("ref")
        .annotate(n=Count("id"))
        .values("n")
    )
    return (
        memories.filter(wanted)
        .select_related("repository")
        .only(*ANSWER_FIELDS)
        .annotate(ref_count=Subquery(same_ref))
        .order_by("id")
    )


def _may_apply(rows: Iterable[tuple], paths: list[str]) -> list[int]:
    """The ids of linked_memories' rows that carry a `pinned` key or a link the rule applies."""
    found = []
    for pk, kind, links, pinned in rows:
        if (kind == "constraint" and pinned is not None) or any(
            link_applies(link, path) for link in valid_links(links) for path in paths
        ):
            found.append(pk)
    return found


def _order(memory: Memory, reasons: list[dict[str, Any]], score: float) -> tuple:
    kinds = {r["reason"] for r in reasons}
    pinned = "pinned" in kinds
    bucket = 0 if pinned else 1 + KIND_ORDER.index(memory.type)
    return (bucket, 0 if "link" in kinds or pinned else 1, -score, memory.memory_id)


def _plan_query(plan: str) -> str:
    """The plan's any-word query, "" when it has no word the keyword index can look for."""
    query = any_word_query(plan) if plan else ""
    return query if has_word(query) else ""


def _text_hits(team: Team, plan: str, repo: Any, now: datetime) -> dict[tuple[int, str], float]:
    """(repository id, memory id) -> text score of the repository memories whose mirrored
    text matches any significant word of the plan, best first."""
    query = any_word_query(plan)
    if not query:
        return {}
    found: dict[tuple[int, str], float] = {}
    for score, refs in _ranked_with_refs(text_chunks(team, repo, now), query, TEXT_DEPTH):
        for ref in sorted(refs):
            _, repository_id, memory_id = ref.split(":", 2)
            found.setdefault((int(repository_id), memory_id), score)
    return found


def text_chunks(team: Team, repo: Repository | None, now: datetime) -> QuerySet:
    """The served chunks mirrored from the (given) repository's memories of the four kinds."""
    origins = active_origins(now=now).filter(kind="repository")
    if repo is not None:
        origins = origins.filter(group=f"repository:{repo.pk}")
    return served_chunks(team, now).filter(
        Exists(origins), memory_type__in=("x_constraint", "pitfall", "decision")
    )


def _ranked_with_refs(chunks: QuerySet, query: str, limit: int) -> list[tuple[float, list[str]]]:
    """(score, the chunk's active repository origin refs) of the best `limit` matches, best
    first, in two statements."""
    hits = keyword_hits(chunks, query, limit=limit)
    by_chunk: dict[int, list[str]] = {}
    for chunk_id, ref in ChunkOrigin.objects.filter(
        chunk_id__in=[h.chunk_id for h in hits], active=True, kind="repository"
    ).values_list("chunk_id", "ref"):
        by_chunk.setdefault(chunk_id, []).append(ref)
    return [(hit.score, by_chunk.get(hit.chunk_id, [])) for hit in hits]
