"""Read a whole source into validated records (`read_source`, stores nothing), and turn what an
administrator typed into a source's kind and identity (`normalize_location`)."""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from formats import openmemories as om
from sources.fetchers import Fetcher, LocationError, SourceError, Validator
from sources.fetchers.raw import RawDigest, entries_pack, stats_pack
from sources.fetchers.spool import ByteSpool

# ----------------------------------------------------------------------------- locations


def normalize_location(location: str) -> tuple[str, str]:
    """(kind, identity) for what an administrator typed: a directory path or an HTTPS URL."""
    location = location.strip()
    if not location:
        raise LocationError("Enter a directory path or an HTTPS URL.")
    if "://" in location:
        parts = urlsplit(location)
        scheme = parts.scheme.lower()
        if scheme not in ("https", "http"):
            raise LocationError("Only https:// URLs (or an absolute directory path) are accepted.")
        if parts.username is not None or parts.password is not None:
            raise LocationError(
                "Do not put credentials in the URL; use the credential fields instead."
            )
        if parts.query or parts.fragment:
            raise LocationError("The base URL must not have a query or fragment.")
        if not parts.hostname:
            raise LocationError("The URL has no host.")
        path = parts.path or "/"
        if not path.endswith("/"):
            path += "/"
        host = parts.netloc.lower()
        return "https", f"{scheme}://{host}{path}"
    if not os.path.isabs(location):
        raise LocationError("A local source must be an absolute directory path.")
    return "local", os.path.normpath(location)


# ----------------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class ReadRecord:
    entry: om.Entry
    record: om.Record
    reused: bool  # unchanged since the last snapshot, so it was not parsed again


# Records kept in memory before the spool writes them out (and read back at once).
SPOOL_BATCH = 256


def pack_record(item: ReadRecord) -> tuple[Any, ...]:
    if item.reused:  # the last snapshot's record: the spool's `previous` gives it back
        return (item.entry.id, item.entry.path, None)
    r = item.record
    return (
        item.entry.id,
        item.entry.path,
        (
            r.id,
            r.title,
            r.kind,
            r.scope,
            r.created,
            r.updated,
            r.body,
            r.tags,
            r.provenance,
            r.expires,
            r.supersedes,
            r.extensions,
            r.content_hash,
        ),
    )


class RecordSpool:
    """The records one read produced, in manifest order: past the first SPOOL_BATCH, in an
    unlinked temporary file (pickled in batches), so a read of 20,000 records holds no more of
    them in memory than one of 2,000. A reused record is kept as its path alone: `previous`
    (the last snapshot's records by path, which the reader holds anyway) gives it back.
    Iterable any number of times; `close` drops the file."""

    def __init__(self, previous: Mapping[str, om.Record] | None = None) -> None:
        self._previous = previous or {}
        self._pending: list[tuple[Any, ...]] = []
        self._bytes = ByteSpool()
        self._spans: list[tuple[int, int]] = []  # (offset, length) of each written batch
        self._count = 0

    def append(self, item: ReadRecord) -> None:
        self.append_packed(pack_record(item))

    def append_packed(self, packed: tuple[Any, ...]) -> None:
        self._pending.append(packed)
        self._count += 1
        if len(self._pending) >= SPOOL_BATCH:
            self._spill()

    def add_pickled(self, data: bytes, count: int) -> None:
        """`count` records as a list of what `pack_record` gave, pickled: a forked read sends
        its records so, and they are spooled as they came, not pickled again."""
        if self._pending:
            self._spill()
        self._spans.append(self._bytes.add(data))
        self._count += count

    def _spill(self) -> None:
        data = pickle.dumps(self._pending, protocol=pickle.HIGHEST_PROTOCOL)
        self._spans.append(self._bytes.add(data))
        self._pending = []

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[ReadRecord]:
        for span in list(self._spans):
            # our own bytes, written above to a file no other process can open by name
            yield from map(self._unpack, pickle.loads(self._bytes.get(span)))  # noqa: S301
        yield from map(self._unpack, list(self._pending))

    def _unpack(self, packed: tuple[Any, ...]) -> ReadRecord:
        entry_id, path, fields = packed
        if fields is None:
            return ReadRecord(om.Entry(entry_id, path), self._previous[path], True)
        return ReadRecord(om.Entry(entry_id, path), om.Record(*fields), False)

    def close(self) -> None:
        self._bytes.close()
        self._spans = []

    def __del__(self) -> None:  # a read nobody closed (a preview, the check command)
        self.close()


class SelectionKey(NamedTuple):
    """What the selection needs of a record (expiry and replacement), without its text; one
    shared `_PLAIN` stands for every record with neither."""

    id: str
    supersedes: tuple[str, ...]
    expires: datetime | None

    def is_expired(self, now: datetime) -> bool:
        return self.expires is not None and self.expires <= now


_PLAIN = SelectionKey("", (), None)


@dataclass
class ReadResult:
    """Everything one read of a source produced; nothing has been stored yet. The records
    are spooled (`RecordSpool`): iterate them, do not index them."""

    identity: str
    manifest: om.Manifest
    manifest_body: bytes
    records: RecordSpool
    rejections: list[om.Rejection]
    selection: om.Selection
    # what the next read can ask conditionally with: only those with an ETag or a
    # Last-Modified (a local read has none, and would hold one per record for nothing)
    validators: dict[str, Validator]
    parsed: int = 0
    reused: int = 0
    entries: int = 0  # the manifest's accepted entries (`drop_entries` may have let them go)
    # the records' ids ascend (code point order) in the order they were read: `served` then
    # gives the brain's mirror its rows in record id order straight from the spool
    ordered: bool = False
    # the fingerprint's hash over the manifest and the records, fed as they were read
    digest: Any = field(default=None, repr=False)
    # what decides, from raw bytes alone, that the next read is unchanged (sources.fetchers.raw)
    raw_digest: str = ""
    raw_entries: bytes = b""  # the accepted entries, for the next raw check (entries_pack)
    raw_stats: bytes = b""  # a local read's record files' stats, for it too (stats_pack)
    # the fingerprint as the read's own process made it, when that was another process
    known_fingerprint: str | None = field(default=None, repr=False)

    def fingerprint(self) -> str:
        """Equal fingerprints mean an identical snapshot (same manifest and record bytes): the
        SHA-256 of the manifest's hash, each record's id, path and hash, and each rejection,
        one per line."""
        if self.known_fingerprint is not None:
            return self.known_fingerprint
        digest = self.digest.copy() if self.digest is not None else _records_digest(self)
        for r in self.rejections:
            digest.update(f"\n{r.code}\0{r.path}\0{r.id}\0{r.message}".encode())
        return digest.hexdigest()

    def served(self) -> Iterator[tuple[Any, ...]]:
        """The active records as the brain's mirror takes them, (id, kind, title, body, tags,
        expires), in the order read: record id order when `ordered`."""
        active = self.selection.active
        for item in self.records:
            r = item.record
            if r.id in active:
                yield (r.id, r.kind, r.title, r.body, list(r.tags), r.expires)

    def drop_entries(self) -> None:
        """Let the manifest's entries go once the records are read (a refresh's swap needs
        only their count, `entries`): one object per record less to hold while storing."""
        self.manifest = replace(self.manifest, entries=())

    def close(self) -> None:
        self.records.close()


def _records_digest(result: ReadResult) -> Any:
    digest = hashlib.sha256(om.content_hash(result.manifest_body).encode())
    for r in result.records:
        digest.update(f"\n{r.entry.id}\0{r.entry.path}\0{r.record.content_hash}".encode())
    return digest


def read_source(
    fetcher: Fetcher,
    *,
    now: datetime,
    previous_records: Mapping[str, om.Record] | None = None,
    previous_manifest: bytes | None = None,
    validators: Mapping[str, Validator] | None = None,
    on_manifest: Callable[[om.Manifest], None] | None = None,
    on_record: Callable[[ReadRecord], None] | None = None,
) -> ReadResult:
    """Read and validate a whole source. `previous_records` (path -> record of the last
    snapshot) lets unchanged files skip parsing; `validators` make HTTPS requests conditional.
    `on_manifest` and `on_record` are told the manifest and each kept record as they are read
    (a streamed refresh hands them on: sources.services.refresh_stream).
    Raises SourceError when the source as a whole fails."""
    previous_records = previous_records or {}
    validators = dict(validators or {})
    new_validators: dict[str, Validator] = {}
    manifest_key = fetcher.manifest_key()
    known = validators.get(manifest_key) if previous_manifest is not None else None
    fetched = fetcher.get_manifest(known)
    manifest_body = fetched.body if fetched.body is not None else (previous_manifest or b"")
    if fetched.validator.etag or fetched.validator.last_modified:
        new_validators[manifest_key] = fetched.validator
    try:
        manifest = om.parse_manifest(
            manifest_body,
            max_bytes=fetcher.policy.max_manifest_bytes,  # type: ignore[attr-defined]
            max_entries=fetcher.policy.max_entries,  # type: ignore[attr-defined]
        )
    except om.ManifestError as exc:
        raise SourceError(exc.code, f"invalid manifest: {exc.message}") from exc
    if on_manifest is not None:
        on_manifest(manifest)
    records = RecordSpool(previous_records)
    keys: dict[str, SelectionKey] = {}  # record id -> what the selection needs
    digest = hashlib.sha256(om.content_hash(manifest_body).encode())
    raw = RawDigest(fetcher.policy, manifest_body)  # type: ignore[attr-defined]
    rejections: list[om.Rejection] = list(manifest.rejected)
    parsed = reused = 0
    order = [True, ""]  # [ids ascending so far, the last id]

    def keep(entry: om.Entry, record: om.Record, reused: bool) -> None:
        item = ReadRecord(entry, record, reused)
        records.append(item)
        if on_record is not None:
            on_record(item)
        if order[0]:
            order[:] = [not order[1] or entry.id > order[1], entry.id]
        # the entry's id is the record's (checked): one string for both
        special = record.supersedes or record.expires is not None
        keys[entry.id] = (
            SelectionKey(entry.id, record.supersedes, record.expires) if special else _PLAIN
        )
        digest.update(f"\n{entry.id}\0{entry.path}\0{record.content_hash}".encode())

    try:
        for entry in manifest.entries:
            key = fetcher.record_key(entry.path)
            before = previous_records.get(entry.path)
            old = validators.get(key)
            conditional = (
                old
                if before is not None and old and old.content_hash == before.content_hash
                else None
            )
            fetched = False  # a rejection before this is the fetch's, after it the parse's
            try:
                got = fetcher.get_record(entry.path, conditional)
                if got.body is None and before is not None:
                    if got.validator.etag or got.validator.last_modified:
                        new_validators[key] = got.validator
                    if before.id == entry.id:
                        raw.body(entry.id, entry.path, got.validator.content_hash)
                        keep(entry, before, True)
                        reused += 1
                        continue
                    got = fetcher.get_record(entry.path, None)
                if got.validator.etag or got.validator.last_modified:
                    new_validators[key] = got.validator
                body = got.body or b""
                # the transports hash what they read (their validator): not hashed again
                body_hash = got.validator.content_hash or om.content_hash(body)
                raw.body(entry.id, entry.path, body_hash)
                fetched = True
                if (
                    before is not None
                    and before.content_hash == body_hash
                    and before.id == entry.id
                ):
                    keep(entry, before, True)
                    reused += 1
                    continue
                parsed += 1
                record = om.parse_record(
                    body,
                    expected_id=entry.id,
                    path=entry.path,
                    max_bytes=fetcher.policy.max_response_bytes,  # type: ignore[attr-defined]
                )
                keep(entry, record, False)
            except om.Rejection as exc:
                if not fetched:
                    raw.refused(entry.id, entry.path, exc)
                rejections.append(
                    om.Rejection(exc.code, exc.message, exc.line, entry.path, exc.id or entry.id)
                )
    except BaseException:
        records.close()
        raise
    selection = om.select_by_id(keys, now=now)  # type: ignore[arg-type]
    return ReadResult(
        identity=fetcher.identity,
        manifest=manifest,
        manifest_body=manifest_body,
        records=records,
        rejections=rejections,
        selection=selection,
        validators=new_validators,
        parsed=parsed,
        reused=reused,
        entries=len(manifest.entries),
        ordered=bool(order[0]),
        digest=digest,
        raw_digest=raw.hexdigest(),
        raw_entries=entries_pack(manifest.entries),
        raw_stats=_stats(fetcher, manifest_body, manifest.entries),
    )


def _stats(fetcher: Fetcher, manifest_body: bytes, entries: Sequence[om.Entry]) -> bytes:
    """The stats a local fetcher kept of the files it read (LocalFetcher.stats), packed for
    the snapshot; b"" for a transport that keeps none or a policy that trusts none."""
    stats = getattr(fetcher, "stats", None)
    if not stats or not fetcher.policy.trust_stat:  # type: ignore[attr-defined]
        return b""
    paths = [entry.path for entry in entries]
    return stats_pack(om.content_hash(manifest_body), paths, stats)
