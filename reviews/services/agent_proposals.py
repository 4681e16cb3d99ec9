"""Proposals from outside the repository (a bundle import): render, scan, commit, push.

Chunks become MemoryRail files with `status: "proposed"`, committed as the proposing agent and
pushed under the repository lock like a decision; then they wait in the review queue.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Q
from django.utils import timezone

from formats import memoryrail
from formats.crosswalk import (
    FRONT_MATTER_KEY,
    chunk_content,
    memory_hashes,
    memoryrail_type,
    proposal_title,
    split_content,
)
from formats.memoryai import content_hash
from memoryadmin.batching import for_batches
from reviews.git import MAX_REJECTED_PUSHES, GitError
from reviews.gitobjects import Changes
from reviews.identity import bot_identity
from reviews.models import DecisionItem, DecisionKind, Memory, PushState, Repository
from reviews.services.index import index_read, index_store
from reviews.services.repositories import working_copy

TRAILER = "Memoryadmin-Proposal"


@dataclass(frozen=True)
class ChunkToPropose:
    label: str  # where it came from, for the report (e.g. "chunks[3]")
    content: str
    content_hash: str
    memory_type: str
    tags: list[str]
    is_pinned: bool
    created_at: datetime | None


@dataclass(frozen=True)
class Decided:
    """The latest pushed decision about one text in a repository."""

    kind: str
    decision_id: int
    ref: str
    actor_label: str
    decided_at: datetime
    comment: str
    lifted: bool  # a rejection a reviewer allowed to be proposed again

    @property
    def blocks(self) -> bool:
        return self.kind == DecisionKind.APPROVE or not self.lifted


@dataclass
class DraftResult:
    drafts: list[dict[str, Any]] = field(default_factory=list)
    existing: int = 0
    rejected: list[tuple[str, Decided]] = field(default_factory=list)
    secrets: list[tuple[str, list[str]]] = field(default_factory=list)
    invalid: list[tuple[str, str]] = field(default_factory=list)


def _slug(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:40].strip("-") or "memory"


def _known(repository: Repository) -> tuple[set[str], set[str]]:
    """Content hashes already in the repository (any status) and memory ids in use."""
    hashes, ids = set(), set()
    for memory in Memory.objects.filter(repository=repository).only(
        "memory_id", "title", "body", "front_matter"
    ):
        ids.add(memory.memory_id)
        text_hash, recorded = memory_hashes(
            title=memory.title, body=memory.body, front_matter=memory.front_matter
        )
        hashes.update(h for h in (text_hash, recorded) if h)
    return hashes, ids


def decided_texts(repository: Repository, hashes: Iterable[str]) -> dict[str, Decided]:
    """Hash -> the latest pushed decision in this repository about that text (matched on the
    reviewed file's text or on the imported chunk's own hash)."""
    wanted = sorted(set(hashes))
    found: dict[str, Decided] = {}
    for batch in for_batches(wanted):
        part = set(batch)
        rows = (
            DecisionItem.objects.filter(
                decision__repository=repository, decision__state=PushState.PUSHED
            )
            .filter(Q(content_hash__in=part) | Q(proposed_hash__in=part))
            .order_by("decision_id", "id")
            .values_list(
                "content_hash",
                "proposed_hash",
                "decision_id",
                "ref",
                "reproposal_allowed_at",
                "decision__kind",
                "decision__actor_label",
                "decision__created_at",
                "decision__comment",
            )
        )
        for text_hash, recorded, decision_id, ref, allowed, kind, label, at, comment in rows:
            decided = Decided(
                kind=kind,
                decision_id=decision_id,
                ref=ref,
                actor_label=label,
                decided_at=at,
                comment=comment,
                lifted=allowed is not None,
            )
            for value in (text_hash, recorded):
                if value in part:
                    found[value] = decided  # rows come oldest first: the latest wins
    return found


def _latest(*candidates: Decided | None) -> Decided | None:
    present = [c for c in candidates if c is not None]
    return max(present, key=lambda c: c.decision_id) if present else None


def proposal_drafts(
    *,
    repository: Repository,
    chunks: list[ChunkToPropose],
    provenance: dict[str, Any],
    now: datetime | None = None,
    waiting: set[str] | frozenset[str] = frozenset(),
    taken_ids: set[str] | frozenset[str] = frozenset(),
) -> DraftResult:
    """Render one proposal file per chunk whose text this repository has not seen; a chunk
    whose file would contain a secret is not written (reported by rule name, never the value).

    Seen: in the repository now (any status), in `waiting` (hashes of proposals not pushed
    yet), or decided there before — approved (the file may have been removed since) or
    rejected, unless a reviewer allowed that rejected text to be proposed again.
    """
    now = now or timezone.now()
    stamp = memoryrail.format_timestamp(now)
    hashes, ids = _known(repository)
    hashes |= waiting
    ids |= taken_ids  # memory ids of drafts not in the repository yet
    # Each chunk with its short title, its whole text as the body, and the hash a file
    # drafted before bodies held the whole text (title = first line) would have.
    texts = []
    for chunk in chunks:
        legacy = content_hash(chunk_content(*split_content(chunk.content)))
        texts.append((chunk, proposal_title(chunk.content), chunk.content.strip(), legacy))
    decided = decided_texts(repository, [t[0].content_hash for t in texts] + [t[3] for t in texts])
    result = DraftResult()
    for chunk, title, body, round_trip in texts:
        if chunk.content_hash in hashes or round_trip in hashes:
            result.existing += 1
            continue
        last = _latest(decided.get(chunk.content_hash), decided.get(round_trip))
        if last is not None and last.blocks:
            if last.kind == DecisionKind.REJECT:
                result.rejected.append((chunk.label, last))
            else:
                result.existing += 1
            continue
        kind, tags = memoryrail_type(chunk.memory_type, chunk.tags)
        day = (chunk.created_at or now).strftime("%Y%m%d")
        memory_id = f"{day}-{_slug(title)}-{chunk.content_hash[:8]}"
        path = f"{memoryrail.MEMORIES_DIR}/{memory_id}.md"
        meta: dict[str, Any] = {
            "id": memory_id,
            "type": kind,
            "title": title,
            "status": "proposed",
            "created": stamp,
            "updated": stamp,
        }
        if tags:
            meta["tags"] = tags
        if chunk.is_pinned:
            meta["pinned"] = True
        meta[FRONT_MATTER_KEY] = {
            **provenance,
            "content_hash": chunk.content_hash,
            "memory_type": chunk.memory_type,
        }
        try:
            text = memoryrail.render(meta, body + "\n" if body else "")
        except memoryrail.WriteError as exc:
            result.invalid.append((chunk.label, str(exc)))
            continue
        memory, problems = memoryrail.parse_memory(text, path=path)
        if memory is None:
            result.invalid.append((chunk.label, ", ".join(sorted({p.code for p in problems}))))
            continue
        findings = memoryrail.scan_text(text, path=path)
        if findings:
            result.secrets.append((chunk.label, sorted({f.rule for f in findings})))
            continue
        if memory_id in ids:  # same id, different text: never overwrite a memory
            result.existing += 1
            continue
        ids.add(memory_id)
        hashes.add(chunk.content_hash)
        result.drafts.append(
            {
                "memory_id": memory_id,
                "path": path,
                "text": text,
                "content_hash": chunk.content_hash,
                "title": title,
                "type": kind,
            }
        )
    return result


def proposals_push(
    *,
    repository_id: int,
    items: list[dict[str, Any]],
    author: tuple[str, str],
    label: str,
    marker: str,
    wait: float = 120.0,
) -> tuple[str, int]:
    """Commit the proposal files as `author` (from objects, on the fetched head: WorkingCopy.
    commit_objects), push with a lease on its parent (never forced), re-index.

    Idempotent: files already present with the same text are not written again; a file with
    the same name but other text is left alone. Returns (commit sha or "", files written).
    Raises GitError (transient ones are retried by the task) and LockBusy.
    """
    repository = Repository.objects.get(pk=repository_id)
    if not repository.push_enabled:
        raise GitError("pushing is disabled for this repository")
    copy = working_copy(repository)
    written = 0

    def attempt() -> tuple[str, str]:
        """The proposals' commit on the fetched head, made from objects (as a decision's)."""
        nonlocal written
        copy.ensure_clone()
        head = copy.fetch()
        present = copy.tree_entries(head, *{item["path"] for item in items})
        # already pushed (or the id is taken): never overwrite
        changes: Changes = {
            item["path"]: ("100644", item["text"].encode("utf-8"))
            for item in items
            if item["path"] not in present
        }
        written = len(changes)
        if not changes:
            return "", ""
        message = (
            f"Propose {written} memor{'y' if written == 1 else 'ies'} ({label})\n\n"
            + "".join(f"- {item['memory_id']}\n" for item in items)
            + f"\n{TRAILER}: {marker}\n"
        )
        sha = copy.commit_objects(
            parent=head, changes=changes, message=message, author=author, committer=bot_identity()
        )
        return sha, head

    with copy.locked(wait=wait):
        sha = copy.push_loop(attempt)
        if sha is None:
            raise GitError(f"the remote kept moving; gave up after {MAX_REJECTED_PUSHES} tries")
        head = copy.reset_to_remote()
        snapshot = index_read(copy, head, repository=repository)
    index_store(repository=repository, snapshot=snapshot)
    return sha, written
