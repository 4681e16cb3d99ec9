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
from datetime import datetime
from functools import lru_cache
from typing import Any

from django.db import connection
from django.db.models import BooleanField, Count, Exists, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

from bundles.agents.errors import AgentError
from bundles.agents.ranking import any_word_query, keyword_hits
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


# A link that normpath would change (a `.` or `..` segment, `//`, a trailing `/`), or `.`: the
# SQL cannot compare it as written, so it is always read and checked in Python. The same text
# is the predicate of the partial index of migration bundles/0011, so the planner can use it.
IRREGULAR_LINKS = (
    "jsonb_path_exists(reviews_memory.front_matter, "
    "'$.links[*] ? (@ like_regex \"(^|/)\\\\.\\\\.?(/|$)|//|/$\")')"
)
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
    memories = candidate_memories(team, repo)
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
    return (
        memories.filter(maybe)
        .order_by()
        .values_list("id", "type", "front_matter__links", "front_matter__pinned")
    )


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
    why: dict[int, list[dict[str, Any]]] = {}
    for pk, kind, links, pinned in linked_memories(team, repo, paths):
        reasons: list[dict[str, Any]] = []
        if kind == "constraint" and pinned is not None:
            reasons.append({"reason": "pinned"})  # checked on the full row below
        for link in valid_links(links):
            for path in paths:
                if link_applies(link, path):
                    reasons.append({"reason": "link", "link": link, "path": path})
        if reasons:
            why[pk] = reasons
    hits = _text_hits(team, plan, repo, now) if plan else {}
    wanted = Q(pk__in=list(why))
    if hits:
        wanted |= Q(memory_id__in=sorted({memory_id for _, memory_id in hits}))
    candidates = {}
    if why or hits:
        rows = candidate_memories(team, repo).filter(wanted).select_related("repository")
        candidates = {m.pk: m for m in rows.only(*ANSWER_FIELDS)}
    for memory in candidates.values():
        reasons = why.get(memory.pk, [])
        if reasons and reasons[0]["reason"] == "pinned" and not memory_pinned(memory):
            reasons.pop(0)  # a `pinned` key that is not true
        if not reasons:
            why.pop(memory.pk, None)
    text_score: dict[int, float] = {}
    by_key = {(m.repository_id, m.memory_id): m for m in candidates.values()}
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
    applying = [candidates[pk] for pk in why if pk in candidates]
    applying.sort(key=lambda m: _order(m, why[m.pk], text_score.get(m.pk, 0.0)))
    ambiguous = _ambiguous_refs(team, [m.ref for m in applying])
    provenance: dict[tuple[int, str], dict[str, Any]] = {}
    groups: dict[int, list[Memory]] = {}
    for memory in applying:
        groups.setdefault(memory.repository_id, []).append(memory)
    for group in groups.values():
        for key, value in memory_provenance(group[0].repository, group).items():
            provenance[(group[0].repository_id, key)] = value
    items = []
    for memory in applying:
        ref = memory.ref if memory.ref not in ambiguous else memory.memory_id
        items.append(
            {
                "ref": memory.ref,
                "ref_ambiguous": memory.ref in ambiguous,
                "cite": f"[per {ref}]",
                "id": memory.memory_id,
                "type": memory.type,
                "pinned": memory_pinned(memory),
                "title": memory.title,
                "body": memory.body,
                "tags": memory_tags(memory),
                "links": memory_links(memory),
                "why": why[memory.pk],
                "repository": memory.repository.name,
                "provenance": {
                    "origin": "repository",
                    "ref": f"repository:{memory.repository_id}:{memory.memory_id}",
                    "repository": memory.repository.name,
                    "repository_id": memory.repository_id,
                    "memory_id": memory.memory_id,
                    "memory_ref": memory.ref,
                    "path": memory.path,
                    "updated": memory.updated,
                    **provenance[(memory.repository_id, memory.memory_id)],
                },
            }
        )
    return {
        "note": UNTRUSTED_NOTE,
        "instruction": INSTRUCTION,
        "count": len(items),
        "conflict_check": [i["cite"] for i in items if i["type"] in ("constraint", "decision")],
        "memories": items,
    }


def _order(memory: Memory, reasons: list[dict[str, Any]], score: float) -> tuple:
    kinds = {r["reason"] for r in reasons}
    pinned = "pinned" in kinds
    bucket = 0 if pinned else 1 + KIND_ORDER.index(memory.type)
    return (bucket, 0 if "link" in kinds or pinned else 1, -score, memory.memory_id)


def _text_hits(team: Team, plan: str, repo: Any, now: datetime) -> dict[tuple[int, str], float]:
    """(repository id, memory id) -> text score of the repository memories whose mirrored
    text matches any significant word of the plan, best first."""
    query = any_word_query(plan)
    if not query:
        return {}
    origins = active_origins(now=now).filter(kind="repository")
    if repo is not None:
        origins = origins.filter(group=f"repository:{repo.pk}")
    chunks = served_chunks(team, now).filter(
        Exists(origins), memory_type__in=("x_constraint", "pitfall", "decision")
    )
    hits = keyword_hits(chunks, query, limit=MAX_TEXT_MATCHES * 3)
    if not hits:
        return {}
    refs: dict[int, list[str]] = {}
    for chunk_id, ref in ChunkOrigin.objects.filter(
        chunk_id__in=[h.chunk_id for h in hits], active=True, kind="repository"
    ).values_list("chunk_id", "ref"):
        refs.setdefault(chunk_id, []).append(ref)
    found: dict[tuple[int, str], float] = {}
    for hit in hits:
        for ref in sorted(refs.get(hit.chunk_id, [])):
            _, repository_id, memory_id = ref.split(":", 2)
            found.setdefault((int(repository_id), memory_id), hit.score)
    return found


def _ambiguous_refs(team: Team, refs: list[str]) -> set[str]:
    """Short refs two or more of the team's memories share: cite those by id (never guess)."""
    if not refs:
        return set()
    rows = (
        Memory.objects.filter(team=team, ref__in=set(refs))
        .values("ref")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .values_list("ref", flat=True)
    )
    return set(rows)
