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
from typing import Any

from django.db.models import Count, Exists
from django.utils import timezone

from bundles.agents.errors import AgentError
from bundles.agents.ranking import any_word_query, keyword_hits
from bundles.agents.readmodel import clean_list, clean_text, team_repository
from bundles.context import UNTRUSTED_NOTE
from bundles.models import ChunkOrigin
from bundles.selectors import active_origins, served_chunks
from formats.memoryrail.fields import check_link
from memoryadmin.models import Team
from reviews.models import Memory, MemoryStatus
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
    links = (memory.front_matter or {}).get("links")
    if isinstance(links, str):
        links = [links]
    if not isinstance(links, list):
        return []
    return [link for link in links if isinstance(link, str) and check_link(link) is None]


def link_applies(link: str, path: str) -> bool:
    """The link is the path, or a directory containing it (never a sibling file)."""
    link = posixpath.normpath(link)
    return link == "." or path == link or path.startswith(link.rstrip("/") + "/")


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
    memories = Memory.objects.filter(
        team=team, status=MemoryStatus.ACTIVE, type__in=KIND_ORDER
    ).select_related("repository")
    if repo is not None:
        memories = memories.filter(repository=repo)
    memories = memories.only(
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
    why: dict[int, list[dict[str, Any]]] = {}
    text_score: dict[int, float] = {}
    candidates = {m.pk: m for m in memories}
    by_ref = {f"repository:{m.repository_id}:{m.memory_id}": m for m in candidates.values()}
    for memory in candidates.values():
        reasons: list[dict[str, Any]] = []
        if memory.type == "constraint" and memory_pinned(memory):
            reasons.append({"reason": "pinned"})
        for link in memory_links(memory):
            for path in paths:
                if link_applies(link, path):
                    reasons.append({"reason": "link", "link": link, "path": path})
        if reasons:
            why[memory.pk] = reasons
    if plan:
        for memory, score, terms in _text_matches(team, plan, repo, by_ref, now):
            why.setdefault(memory.pk, []).append({"reason": "text", "matched": terms})
            text_score[memory.pk] = score
    applying = [candidates[pk] for pk in why]
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


def _text_matches(
    team: Team, plan: str, repo: Any, by_ref: dict[str, Memory], now: datetime
) -> list[tuple[Memory, float, list[str]]]:
    """Memories whose mirrored text matches any significant word of the plan, best first."""
    query = any_word_query(plan)
    if not query or not by_ref:
        return []
    origins = active_origins(now=now).filter(kind="repository")
    if repo is not None:
        origins = origins.filter(group=f"repository:{repo.pk}")
    chunks = served_chunks(team, now).filter(
        Exists(origins), memory_type__in=("x_constraint", "pitfall", "decision")
    )
    hits = keyword_hits(chunks, query, limit=MAX_TEXT_MATCHES * 3)
    if not hits:
        return []
    refs: dict[int, list[str]] = {}
    for chunk_id, ref in ChunkOrigin.objects.filter(
        chunk_id__in=[h.chunk_id for h in hits], active=True, kind="repository"
    ).values_list("chunk_id", "ref"):
        refs.setdefault(chunk_id, []).append(ref)
    terms = query.split(" or ")
    found: list[tuple[Memory, float, list[str]]] = []
    seen: set[int] = set()
    for hit in hits:
        for ref in sorted(refs.get(hit.chunk_id, [])):
            memory = by_ref.get(ref)
            if memory is None or memory.pk in seen:
                continue
            seen.add(memory.pk)
            text = f"{memory.title}\n{memory.body}".lower()
            found.append((memory, hit.score, [t for t in terms if t in text][:20]))
    return found[:MAX_TEXT_MATCHES]


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
