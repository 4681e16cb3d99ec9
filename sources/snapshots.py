"""Storing what a refresh read: the previous snapshot's records as values (`previous_state`),
a new snapshot with its records, rejections and problems (`snapshot_create`), or the same
snapshot stamped again (`snapshot_touch` after a full read, `snapshot_keep` after a raw check
found the same bytes)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from formats import openmemories as om
from memoryadmin.batching import for_batches
from memoryadmin.binary import binary_cursor
from memoryadmin.bulk import bulk_insert, insert_values, json_loads, stream_rows, value_plan
from sources.fetchers import Validator
from sources.fetchers.read import ReadRecord, ReadResult, SelectionKey
from sources.models import TIMED, HttpValidator, Problem, Record, Rejection, Snapshot, Source

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


def previous_rows(snapshot: Snapshot | None) -> dict[str, StoredRecord]:
    """The last snapshot's records by path, for a full read to reuse by hash."""
    if snapshot is None:
        return {}
    values = Record.objects.filter(snapshot=snapshot).order_by().values_list(*PREVIOUS_FIELDS)
    # tuples straight from psycopg: Django's converters were half of an unchanged refresh
    return {
        row[1]: StoredRecord(*row)
        for row in stream_rows(values, itersize=2000, json_loads=json_loads)
    }


def stored_validators(source: Source) -> dict[str, Validator]:
    return {
        url: Validator(etag, last_modified, content_hash)
        for url, etag, last_modified, content_hash in HttpValidator.objects.filter(
            source=source
        ).values_list("url", "etag", "last_modified", "content_hash")
    }


def validators_store(source: Source, validators: Mapping[str, Validator]) -> None:
    """What the next read of an HTTPS source asks conditionally with, replacing the last."""
    HttpValidator.objects.filter(source=source).delete()
    bulk_insert(
        HttpValidator,
        [
            HttpValidator(
                source=source,
                url=url,
                etag=v.etag[:500],
                last_modified=v.last_modified[:100],
                content_hash=v.content_hash,
            )
            for url, v in validators.items()
            if v.etag or v.last_modified
        ],
        batch_size=INSERT_BATCH,
    )


def snapshot_create(
    source: Source,
    result: ReadResult,
    fingerprint: str,
    now: datetime,
    *,
    opened: Snapshot | None = None,
    records_stored: bool = False,
) -> Snapshot:
    """The snapshot of what `result` read, with its records, rejections and problems; or
    `opened` (a streamed refresh's empty snapshot, made before its read ended) filled in,
    its records already stored when `records_stored` (`records_insert`, as they were read)."""
    selection = result.selection
    fields = {
        "retrieved_at": now,
        "manifest_name": result.manifest.name[:200],
        "manifest_entries": result.entries + len(result.manifest.rejected),
        "manifest_body": result.manifest_body,
        "fingerprint": fingerprint,
        "raw_digest": result.raw_digest,
        "raw_entries": result.raw_entries,
        "raw_stats": result.raw_stats,
        "record_count": len(result.records),
        "active_count": len(selection.active),
        "rejected_count": len(result.rejections),
        "problem_count": len(selection.problems),
    }
    if opened is None:
        snapshot = Snapshot.objects.create(source=source, **fields)
    else:
        snapshot = opened
        for name, value in fields.items():
            setattr(snapshot, name, value)
        _save(snapshot, list(fields))
    if not records_stored:
        active, inactive = selection.active, selection.inactive
        records_insert(
            snapshot.pk,
            source.pk,
            result.records,
            now,
            lambda r: (r.id in active, inactive.get(r.id, "")),
        )
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


def records_insert(
    snapshot_id: int,
    source_id: int,
    items: Iterable[ReadRecord],
    now: datetime,
    state: Callable[[om.Record], tuple[bool, str]],
) -> None:
    """Store read records in a snapshot; `state`: a record's (active, inactive reason)."""
    # in batches, as the spool gives them (elsewhere than PostgreSQL `bulk_create` lists them)
    rows = map(record_rows(snapshot_id, source_id, now, state), items)
    for batch in for_batches(rows, RECORD_BATCH):
        records_store(batch)


def record_rows(
    snapshot_id: int,
    source_id: int,
    now: datetime,
    state: Callable[[om.Record], tuple[bool, str]],
) -> Callable[[ReadRecord], Any]:
    """read record -> its row as `records_store` takes it: plain values, made ready for COPY
    (`value_plan`; a Record instance per row was a sixth of a cold refresh). Plain Python: a
    streamed refresh makes them on its read's thread, one maker per thread."""
    plan = value_plan(Record, RECORD_FIELDS)

    def row(item: ReadRecord) -> Any:
        r = item.record
        return plan(
            (
                snapshot_id,
                source_id,
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
                *state(r),
            )
        )

    return row


def records_store(rows: list[Any]) -> None:
    """Store rows `record_rows` made (one COPY on PostgreSQL)."""
    insert_values(Record, RECORD_FIELDS, rows, batch_size=INSERT_BATCH, planned=True)


def _save(snapshot: Snapshot, fields: list[str]) -> None:
    """`snapshot.save(update_fields=fields)`. PostgreSQL: the byte fields go as binary
    parameters of a statement of their own (`memoryadmin.binary`: a 10k source's ~1 MB of
    them was ~2 MB of hex in Django's statement text)."""
    blobs = [name for name in fields if name in Snapshot.BYTE_FIELDS]
    if connection.vendor != "postgresql" or not blobs:
        snapshot.save(update_fields=fields)
        return
    rest = [name for name in fields if name not in blobs]
    if rest:
        snapshot.save(update_fields=rest)
    quote = connection.ops.quote_name
    columns = ", ".join(f"{quote(Snapshot._meta.get_field(name).column)} = %s" for name in blobs)
    values = [getattr(snapshot, name) for name in blobs]
    with binary_cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(Snapshot._meta.db_table)} SET {columns} WHERE id = %s",  # noqa: S608
            [*values, snapshot.pk],
        )


def _flip(selection: om.Selection, rows: Iterable[tuple[int, str, bool, str]]) -> bool:
    """Store the selection's state on the stored records (pk, record id, active, inactive
    reason) whose state it changed; True when it changed any."""
    flipped = False
    for pk, record_id, was_active, was_reason in rows:
        active = record_id in selection.active
        reason = selection.inactive.get(record_id, "")
        if was_active != active or was_reason != reason:
            Record.objects.filter(pk=pk).update(active=active, inactive_reason=reason)
            flipped = True
    return flipped


def snapshot_touch(
    snapshot: Snapshot,
    rows: dict[str, StoredRecord],
    selection: om.Selection,
    now: datetime,
    raw: tuple[str, bytes, bytes],
) -> bool:
    """Same bytes as before: stamp the snapshot's retrieval time (records read theirs from
    it) and re-apply expiry to the records it flips. True when some record flipped. The raw
    digest, entries and files' stats (`raw`) are stored again: a snapshot from before they
    existed (or from another reader version) takes the raw check's short way from the next
    refresh on."""
    flipped = _flip(
        selection, ((r.pk, r.record_id, r.active, r.inactive_reason) for r in rows.values())
    )
    snapshot.retrieved_at = now
    snapshot.active_count = len(selection.active)
    snapshot.raw_digest, snapshot.raw_entries, snapshot.raw_stats = raw
    _save(snapshot, ["retrieved_at", "active_count", "raw_digest", "raw_entries", "raw_stats"])
    return flipped


def snapshot_keep(
    snapshot: Snapshot, *, selected_at: datetime, now: datetime, stats: bytes | None = None
) -> bool:
    """The raw check found the same bytes under the same rules: only time can have changed
    what the snapshot serves. Apply the selection again as `snapshot_touch` does, over the
    records with an expiry or a replacement (and the ids they replace) alone: every other
    record is active and stays so. Stamps the retrieval time, and keeps the files' `stats`
    when the check read some file again; True when some record flipped."""
    timed = list(
        Record.objects.filter(snapshot=snapshot)
        .filter(TIMED)
        .order_by()
        .values_list("pk", "record_id", "expires", "supersedes", "active", "inactive_reason")
    )
    keys: dict[str, Any] = {
        record_id: SelectionKey(record_id, tuple(supersedes), expires)
        for _, record_id, expires, supersedes, _, _ in timed
    }
    targets = sorted({t for key in keys.values() for t in key.supersedes} - keys.keys())
    for batch in for_batches(iter(targets), 1000):
        held = Record.objects.filter(snapshot=snapshot, record_id__in=batch).order_by()
        # a replaced record with no expiry or replacement of its own: its state cannot move
        # with time, but the selection must know it exists (else "supersedes-missing")
        keys.update(
            (t, SelectionKey(t, (), None)) for t in held.values_list("record_id", flat=True)
        )
    selection = om.select_by_id(keys, now=selected_at)
    flipped = _flip(selection, ((pk, rid, active, why) for pk, rid, _, _, active, why in timed))
    snapshot.retrieved_at = now
    snapshot.active_count = snapshot.record_count - len(selection.inactive)
    fields = ["retrieved_at", "active_count"]
    if stats is not None:
        snapshot.raw_stats = stats
        fields.append("raw_stats")
    _save(snapshot, fields)
    return flipped
