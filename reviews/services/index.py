"""The index of a repository: read every memory at one head, then swap the rows in one
transaction (and tell the brain, the assignments and the team's webhooks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from typing import Any

from django.db import transaction
from django.utils import timezone

from formats import memoryrail
from formats.memoryrail.secrets import secrets_mask_field
from memoryadmin.audit import Actor, audit_record
from memoryadmin.bulk import insert_values, json_loads, stream_rows, update_values
from reviews.git import WorkingCopy
from reviews.githistory import History
from reviews.gitobjects import TreeEntry
from reviews.models import Memory, MemoryStatus, Repository, SyncState
from reviews.services.routing import assignments_refresh
from reviews.signals import IndexedMemory, repository_indexed
from webhooks import events as webhook_events
from webhooks.emit import event_emit

# At most this many `proposal.created` events per sync; one summary event covers the rest.
PROPOSAL_EVENTS_MAX = 100


@dataclass
class IndexSnapshot:
    """Everything read from a working copy at one head, before it touches the database."""

    head: str
    config: memoryrail.Config | None
    problems: list[dict[str, Any]] = field(default_factory=list)
    ambiguous_refs: dict[str, list[str]] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)


def index_read(copy: WorkingCopy, head: str, *, repository: Repository) -> IndexSnapshot:
    """Read and check every memory of the working copy's HEAD from its objects (call with the
    lock held): the blobs as committed, whatever a checkout's `.gitattributes` would convert.
    Every file is parsed strictly: at ~30 us a file that is cheaper than reading its stored
    front matter back from the database to skip the parse (`read_project`'s `known`), as
    round 6 did."""
    project, entries, _ = copy.project("HEAD")
    snapshot = IndexSnapshot(
        head=head,
        config=project.config,
        problems=[p.as_dict() | {"level": p.level} for p in project.problems],
    )
    if project.config is None:
        return snapshot
    snapshot.ambiguous_refs = memoryrail.RefIndex(project.memories).ambiguous()
    blobs = {path: entry.sha for path, entry in entries.items()}
    # the history's answers, walked since the last index's head when that gives the same
    history = History(copy, head, folder=memoryrail.MEMORIES_DIR)
    added = history.added_by()
    stale_by_id: dict[str, list[dict[str, str]]] = {}
    # Proposals too: the queue's "stale links" filter and the approve guard read this.
    for stale in memoryrail.check_staleness(
        project.memories,
        root=copy.path,
        last_commit_times=history.link_times,
        statuses=memoryrail.REVIEW_STATUSES,
        memory_entries={path: entry.mode for path, entry in entries.items()},
        memory_symlinks=_symlink_targets(copy, entries),
    ):
        stale_by_id.setdefault(stale.id, []).append(stale.as_dict())
    history.save()
    for memory in project.memories:
        # The bytes read_entries parsed (every memory's); splitlines() numbers lines alike
        # with or without \r\n.
        text = project.data[memory.path].decode("utf-8")
        findings = [
            {"rule": f.rule, "line": f.line} for f in memoryrail.scan_text(text, path=memory.path)
        ]
        commit, author, email, date = added.get(memory.path, ("", "", "", ""))
        stale = stale_by_id.get(memory.id, [])
        snapshot.rows.append(
            {
                "memory_id": memory.id,
                "ref": memory.ref,
                "type": memory.type,
                "title": memory.title[:1000],
                "status": memory.status,
                "path": memory.path,
                "blob_sha": blobs.get(memory.path, ""),
                "front_matter": _jsonable_mapping(memory.meta),
                "body": memory.body,
                "supersedes": memory.supersedes or "",
                "superseded_by": memory.superseded_by or "",
                "created": memory.created[:40],
                "updated": memory.updated[:40],
                "author_name": author[:200],
                "author_email": email[:200],
                "added_commit": commit,
                "added_at": datetime.fromisoformat(date) if date else None,
                "secret_findings": findings,
                "stale": stale,
                "has_secret": bool(findings),
                "is_stale": bool(stale),
            }
        )
    return snapshot


def _symlink_targets(copy: WorkingCopy, entries: dict[str, TreeEntry]) -> dict[str, str]:
    """path -> target of the memories folder's symlinks (rare: one `cat-file` when any)."""
    links = {
        path: entry.sha for path, entry in entries.items() if entry.mode == memoryrail.SYMLINK_MODE
    }
    contents = copy.contents(links.values()) if links else {}
    return {
        path: contents[sha].decode("utf-8", "surrogateescape")
        for path, sha in links.items()
        if sha in contents
    }


def _jsonable_mapping(meta: dict[str, Any]) -> dict[str, Any]:
    """`meta` as JSON holds it: as it is when every key is text and every value text or a list
    of text (nearly every memory's front matter), else rebuilt by `_jsonable`."""
    for key, value in meta.items():
        if type(key) is not str:
            return _jsonable(meta)  # type: ignore[no-any-return]
        if type(value) is not str and not (
            type(value) is list and all(type(item) is str for item in value)  # links, tags
        ):
            return _jsonable(meta)  # type: ignore[no-any-return]
    return meta


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return "NaN"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):  # nor Infinity
        return "Infinity" if value > 0 else "-Infinity"
    return value


_FIELDS = (
    "ref",
    "type",
    "title",
    "status",
    "path",
    "blob_sha",
    "front_matter",
    "body",
    "supersedes",
    "superseded_by",
    "created",
    "updated",
    "author_name",
    "author_email",
    "added_commit",
    "added_at",
    "secret_findings",
    "stale",
    "has_secret",
    "is_stale",
)
_AT = {name: i for i, name in enumerate(("pk", "memory_id", *_FIELDS))}  # in a held row
_MIRRORED = IndexedMemory._fields[1:]  # what the brain reads of an active memory
_NEW_FIELDS = ("team", "repository", "indexed_at", "memory_id", *_FIELDS)
# a read row's values, each a tuple made in C (a `row.get` per field was a call each)
_new_values = itemgetter("memory_id", *_FIELDS)
_mirrored = itemgetter(*IndexedMemory._fields)


@transaction.atomic
def index_store(*, repository: Repository, snapshot: IndexSnapshot) -> Repository:
    """Swap the repository's index to `snapshot` in one transaction."""
    repository = Repository.objects.select_for_update().get(pk=repository.pk)
    now = timezone.now()
    previous_head = repository.head_commit
    repository.last_sync_at = now
    repository.head_commit = snapshot.head
    repository.problems = snapshot.problems
    repository.ambiguous_refs = snapshot.ambiguous_refs
    repository.sync_state = SyncState.IDLE
    if snapshot.config is None:
        # No readable config: keep the last index and say why instead of emptying the queue.
        problem = snapshot.problems[0] if snapshot.problems else {"code": "config-missing"}
        repository.last_sync_ok = False
        repository.last_error = f"{problem['code']}: {problem.get('message', '')}"
        repository.save()
        return repository
    # review_mode is blank until an index with a readable config: this is the first real index.
    first_index = not repository.review_mode
    repository.last_sync_ok = True
    repository.last_error = ""
    repository.review_mode = snapshot.config.review
    repository.save()
    # plain values both ways: a Memory instance per row was a third of storing an index
    held = Memory.objects.filter(repository=repository).values_list("pk", "memory_id", *_FIELDS)
    existing = {row[1]: row for row in stream_rows(held, itersize=2000, json_loads=json_loads)}
    team_id, repository_id = repository.team_id, repository.pk  # not a descriptor per row
    seen = set()
    to_create: list[tuple[Any, ...]] = []
    # rows by the fields that changed: after a batch approval only status, updated and the
    # blob moved (5 fields of 21)
    to_update: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
    new_proposals: list[dict[str, Any]] = []
    active: list[IndexedMemory] = []  # the active memories as stored, for the brain
    for row in snapshot.rows:
        seen.add(row["memory_id"])
        current = existing.get(row["memory_id"])
        if row["status"] == MemoryStatus.PROPOSED and (
            current is None or current[_AT["status"]] != MemoryStatus.PROPOSED
        ):
            new_proposals.append(row)  # a new id, or one proposed again
        stored = current  # the row as the table holds it after the swap (None: written now)
        if current is None:
            to_create.append((team_id, repository_id, now, *_new_values(row)))
        elif current[_AT["blob_sha"]] != row["blob_sha"] or any(
            current[_AT[name]] != row[name] for name in ("stale", "added_commit")
        ):
            changed = tuple(name for name in _FIELDS if current[_AT[name]] != row[name])
            values = (current[0], *(row[name] for name in changed), now)
            to_update.setdefault(changed, []).append(values)
            stored = None
        if stored is None:
            if row["status"] == MemoryStatus.ACTIVE:
                active.append(IndexedMemory(*_mirrored(row)))
        elif stored[_AT["status"]] == MemoryStatus.ACTIVE:
            active.append(IndexedMemory(stored[1], *(stored[_AT[n]] for n in _MIRRORED)))
    insert_values(Memory, _NEW_FIELDS, to_create, batch_size=500)
    for fields, rows in to_update.items():
        update_values(Memory, [*fields, "indexed_at"], rows, batch_size=500)
    gone = [row[0] for memory_id, row in existing.items() if memory_id not in seen]
    if gone:
        Memory.objects.filter(pk__in=gone).delete()
    assignments_refresh(repository=repository)
    _proposal_events(repository, new_proposals, first_index=first_index)
    if previous_head != snapshot.head:
        audit_record(
            actor=Actor.system(),
            action="repository.sync",
            team=repository.team,
            target=repository,
            summary=f"Synced {repository.name} at {snapshot.head[:10]}",
            data={
                "head": snapshot.head,
                "created": len(to_create),
                "updated": sum(len(rows) for rows in to_update.values()),
                "removed": len(gone),
                "problems": len(snapshot.problems),
            },
        )
    # The brain holds exactly the active memories of this index (same transaction); they are
    # handed over as stored, in the order the brain reads them (code points).
    active.sort(key=lambda memory: memory.memory_id)
    repository_indexed.send(sender=Repository, repository=repository, actor=None, memories=active)
    return repository


def _proposal_events(
    repository: Repository, proposals: list[dict[str, Any]], *, first_index: bool
) -> None:
    """One `proposal.created` per new proposal, bounded; a summary for the rest (docs/webhooks.md).

    The first index of a repository finds proposals that were waiting before it was added: one
    summary event says how many, instead of one event each.
    """
    if not proposals:
        return
    where = {"id": repository.pk, "name": repository.name}
    sent = 0 if first_index else min(len(proposals), PROPOSAL_EVENTS_MAX)
    for row in proposals[:sent]:
        event_emit(
            team=repository.team,
            event=webhook_events.PROPOSAL_CREATED,
            data={
                "summary": False,
                "repository": where,
                "memory_id": row["memory_id"],
                "ref": row["ref"],
                "type": row["type"],
                "title": secrets_mask_field("title", row["title"]),
                "path": row["path"],
                "supersedes": row["supersedes"],
            },
        )
    if sent < len(proposals):
        event_emit(
            team=repository.team,
            event=webhook_events.PROPOSAL_CREATED,
            data={
                "summary": True,
                "repository": where,
                "reason": "first-index" if first_index else "too-many",
                "count": len(proposals),
                "omitted": len(proposals) - sent,
            },
        )
