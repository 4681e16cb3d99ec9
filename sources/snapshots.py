"""Storing what a refresh read: the previous snapshot's records as values (`previous_state`),
a new snapshot with its records, rejections and problems (`snapshot_create`), or the same
snapshot stamped again (`snapshot_touch`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from formats import openmemories as om
from memoryadmin.batching import for_batches
from memoryadmin.bulk import insert_values, json_loads, stream_rows
from sources.fetchers import Validator
from sources.fetchers.read import ReadResult
from sources.models import HttpValidator, Problem, Record, Rejection, Snapshot, Source

INSERT_BATCH = 500
RECORD_BATCH = 2000  # records stored per statement (COPY) by a new snapshot

RECORD_FIELDS = (
    "snapshot",
    "source",
    "record_id",
    "path",
    "kind",
    "scope",
    "title",
    "body",
    "tags",
    "provenance",
    "created",
    "updated",
    "expires",
    "supersedes",
    "extensions",
    "content_hash",
    "retrieved_at",
    "active",
    "inactive_reason",
)


PREVIOUS_FIELDS = (
    "pk",
    "path",
    "record_id",
    "title",
    "kind",
    "scope",
    "created",
    "updated",
    "body",
    "tags",
    "provenance",
    "expires",
    "supersedes",
    "extensions",
    "content_hash",
    "active",
    "inactive_reason",
)


@dataclass(frozen=True)
class StoredRecord:
    """A stored record as the refresh needs it: read as values, no model instances."""

    pk: int
    path: str
    record_id: str
    title: str
    kind: str
    scope: str
    created: datetime
    updated: datetime
    body: str
    tags: list[str]
    provenance: Any
    expires: datetime | None
    supersedes: list[str]
    extensions: dict[str, Any]
    content_hash: str
    active: bool
    inactive_reason: str

    def as_record(self) -> om.Record:
        return om.Record(
            id=self.record_id,
            title=self.title,
            kind=self.kind,
            scope=self.scope,
            created=self.created,
            updated=self.updated,
            body=self.body,
            tags=tuple(self.tags),
            provenance=self.provenance,
            expires=self.expires,
            supersedes=tuple(self.supersedes),
            extensions=self.extensions,
            content_hash=self.content_hash,
        )


class StoredRecords(Mapping[str, Any]):
    """The last snapshot's records by path, each made a record only when the read asks for
    it (a dict of them all would hold every record twice during the read)."""

    def __init__(self, rows: dict[str, StoredRecord]) -> None:
        self._rows = rows

    def __getitem__(self, path: str) -> Any:
        return self._rows[path].as_record()

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


def previous_state(
    source: Source,
) -> tuple[Snapshot | None, dict[str, StoredRecord], dict[str, Validator]]:
    snapshot = source.current_snapshot
    rows: dict[str, StoredRecord] = {}
    if snapshot is not None:
        values = Record.objects.filter(snapshot=snapshot).order_by().values_list(*PREVIOUS_FIELDS)
        # tuples straight from psycopg: Django's converters were half of an unchanged refresh
        rows = {
            row[1]: StoredRecord(*row)
            for row in stream_rows(values, itersize=2000, json_loads=json_loads)
        }
    validators = {
        v.url: Validator(v.etag, v.last_modified, v.content_hash)
        for v in HttpValidator.objects.filter(source=source)
    }
    return snapshot, rows, validators


def snapshot_create(
    source: Source, result: ReadResult, fingerprint: str, now: datetime
) -> Snapshot:
    selection = result.selection
    snapshot = Snapshot.objects.create(
        source=source,
        retrieved_at=now,
        manifest_name=result.manifest.name[:200],
        manifest_entries=result.entries + len(result.manifest.rejected),
        manifest_body=result.manifest_body,
        fingerprint=fingerprint,
        record_count=len(result.records),
        active_count=len(selection.active),
        rejected_count=len(result.rejections),
        problem_count=len(selection.problems),
    )
    active, inactive = selection.active, selection.inactive
    # plain rows, COPY-ed: a Record instance per row was a sixth of a cold refresh; in
    # batches, as the spool gives them (elsewhere than PostgreSQL `bulk_create` lists them)
    rows = (
        (
            snapshot.pk,
            source.pk,
            r.id,
            item.entry.path,
            r.kind,
            r.scope,
            r.title,
            r.body,
            list(r.tags),
            r.provenance,
            r.created,
            r.updated,
            r.expires,
            list(r.supersedes),
            r.extensions,
            r.content_hash,
            now,
            r.id in active,
            inactive.get(r.id, ""),
        )
        for item in result.records
        for r in (item.record,)
    )
    for batch in for_batches(rows, RECORD_BATCH):
        insert_values(Record, RECORD_FIELDS, batch, batch_size=INSERT_BATCH)
    Rejection.objects.bulk_create(
        (
            Rejection(
                snapshot=snapshot,
                # Names come from the manifest: PostgreSQL text cannot hold NUL.
                path=(r.path or "").replace("\x00", "\ufffd")[:1000],
                record_id=(r.id or "").replace("\x00", "\ufffd")[:500],
                code=r.code,
                message=r.message.replace("\x00", "\ufffd"),
                line=r.line,
            )
            for r in result.rejections
        ),
        batch_size=INSERT_BATCH,
    )
    Problem.objects.bulk_create(
        Problem(snapshot=snapshot, code=p.code, ids=list(p.ids), message=p.message)
        for p in selection.problems
    )
    return snapshot


def snapshot_touch(
    snapshot: Snapshot, rows: dict[str, StoredRecord], selection: om.Selection, now: datetime
) -> bool:
    """Same bytes as before: stamp the snapshot's retrieval time (records read theirs from
    it) and re-apply expiry to the records it flips. True when some record flipped."""
    flipped = False
    for row in rows.values():
        active = row.record_id in selection.active
        reason = selection.inactive.get(row.record_id, "")
        if row.active != active or row.inactive_reason != reason:
            Record.objects.filter(pk=row.pk).update(active=active, inactive_reason=reason)
            flipped = True
    snapshot.retrieved_at = now
    snapshot.active_count = len(selection.active)
    snapshot.save(update_fields=["retrieved_at", "active_count"])
    return flipped
