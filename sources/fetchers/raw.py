"""What decides that a source is unchanged, from its raw bytes alone (`raw_check`), and a
fetcher that answers a full read from what that check already fetched (`Replay`).

The raw digest is the SHA-256 of the reader's version, the fetch limits that reject records,
the manifest's hash, and each accepted entry's id and path with its body's hash (or the reason
its fetch was refused). Everything else a read produces (records, rejections, problems) is a
function of those bytes under those rules, except expiry, which the refresh applies again at
every read. A snapshot stores the digest of the read that made it (`Snapshot.raw_digest`):
an equal digest means parsing the same bytes again would give the same snapshot.

A local record file's hash may come from its stat instead of its bytes (`FileStat`, kept per
accepted entry on the snapshot: `stats_pack`): the digest is the same function of the bytes
either way, since a trusted stat stands for the very file that was hashed.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import orjson

from formats import openmemories as om
from sources.fetchers import Fetched, Fetcher, FetchPolicy, SourceError, Validator
from sources.fetchers.spool import ByteSpool

# Bump whenever what a read makes of the same bytes changes: the OpenMemories reading rules
# (formats/openmemories: parsing, field checks, rejections, selection) or how read_source
# applies them. A snapshot stored under another version never counts as unchanged; its next
# refresh takes the full read once (which reuses records by hash) and stores the new digest.
READER_VERSION = 1


class RawDigest:
    """The raw digest, fed as a read goes: the manifest first, then each entry in order.

    The entries' lines are hashed in runs (`RUN` at a time): one `update` of their joined
    bytes hashes what one `update` each would, without a call and an encode per entry."""

    RUN = 2048

    def __init__(self, policy: FetchPolicy, manifest_body: bytes) -> None:
        limits = (policy.max_manifest_bytes, policy.max_entries, policy.max_response_bytes)
        head = f"openmemories-reader {READER_VERSION}\0{limits}\n{om.content_hash(manifest_body)}"
        self._hash = hashlib.sha256(head.encode())
        self._lines: list[str] = []

    def body(self, entry_id: str, path: str, body_hash: str) -> None:
        self.line(f"\n{entry_id}\0{path}\0{body_hash}")

    def refused(self, entry_id: str, path: str, rejection: om.Rejection) -> None:
        """The fetch itself refused the entry (missing, outside the source, too large)."""
        self.line(f"\n{entry_id}\0{path}\0!{rejection.code}\0{rejection.message}")

    def line(self, text: str) -> None:
        lines = self._lines
        lines.append(text)
        if len(lines) >= self.RUN:
            self._flush()

    def _flush(self) -> None:
        self._hash.update("".join(self._lines).encode())
        self._lines = []

    def hexdigest(self) -> str:
        self._flush()
        return self._hash.hexdigest()


def entries_pack(entries: Iterable[om.Entry]) -> bytes:
    """The manifest's accepted entries, (id, path) in order, as a snapshot keeps them: the
    next raw check of the same manifest bytes reads its files without parsing it again."""
    pairs = [[e.id, e.path] for e in entries]
    return zlib.compress(json.dumps(pairs).encode("ascii"), 1)  # escapes: any id survives


def entries_unpack(packed: bytes) -> list[list[str]]:
    """The (id, path) pairs `entries_pack` kept, as two-item lists (orjson's C parse: 10,000
    pairs in ~2 ms, where the standard library and a tuple each took ~8 ms). A lone surrogate
    escaped in an id or path, which orjson refuses, goes to the standard library."""
    data = zlib.decompress(packed)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


# A record file's stat as a read found it, with the hash of the bytes read, in 72 bytes: its
# (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns) packed in `_KEY`, then the hash. The same
# five fields later mean the same file, unwritten since (a tool that puts an mtime back still
# moves the ctime, which nothing sets back). Bytes, not objects: one per file of a read.
FileStat = bytes
_KEY = struct.Struct("=QQqqq")
_SLOT = _KEY.size + 32
_SIZE = slice(16, 24)  # st_size's bytes


def stat_row(key: tuple[int, int, int, int, int], body_hash: str) -> FileStat:
    return _KEY.pack(*key) + bytes.fromhex(body_hash)


def stat_of(info: os.stat_result, body_hash: str) -> FileStat:
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    return stat_row(key, body_hash)


def stat_key(row: FileStat) -> tuple[int, int, int, int, int]:
    return _KEY.unpack_from(row)  # type: ignore[return-value]


def stat_hash(row: FileStat) -> str:
    return row[_KEY.size :].hex()


def kept_answers(
    paths: Sequence[str],
    rows: Iterable[FileStat],
    folders: dict[str, int],
    open_folder: Any,
    limit: int,
) -> list[str | None]:
    """Per path, the hash its kept `rows` entry holds when an lstat (never following a
    symlink) of its name in its folder's descriptor (`folders[folder]`, else
    `open_folder(folder, path)`: -1 when there is none) is the regular file the row was kept
    for, unwritten since and within `limit` bytes (over it, the read refuses the file); else
    None. One tight loop: an unchanged refresh asks it for 10,000 files, and the lstats
    themselves (~2 µs each) are most of what it may cost. A row with no stat kept has size -1,
    which no file matches."""
    pack, lstat, regular, cut = _KEY.pack, os.lstat, stat.S_ISREG, _KEY.size
    answers: list[str | None] = []
    append = answers.append
    for path, row in zip(paths, rows, strict=False):
        folder, _, name = path.rpartition("/")
        descriptor = folders.get(folder)
        if descriptor is None:
            descriptor = open_folder(folder, path)
        try:
            info = lstat(name, dir_fd=descriptor) if descriptor >= 0 else None
        except (OSError, ValueError):
            info = None
        if (
            info is not None
            and info.st_size <= limit
            and regular(info.st_mode)
            and row.startswith(
                pack(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            )
        ):
            append(row[cut:].hex())
        else:
            append(None)
    return answers


# an entry with no stat kept (or a file read but not to be trusted): size -1 matches no file
NO_STAT = stat_row((0, 0, -1, 0, 0), "00" * 32)
_NO_SIZE = NO_STAT[_SIZE]


def stat_kept(row: FileStat) -> bool:
    return row[_SIZE] != _NO_SIZE


def stats_pack(
    manifest_hash: str,
    paths: Sequence[str],
    table: Mapping[str, FileStat],
    kept: Iterable[FileStat] | None = None,
) -> bytes:
    """The stats of `paths` (the accepted entries of the manifest hashing to `manifest_hash`,
    in order) as the snapshot keeps them (`Snapshot.raw_stats`: the manifest's hash, then one
    `FileStat` per entry, in the machine's byte order: another machine's match no file, so
    each is read once): each path's from `table`, else the one `kept` had for it (a file whose
    stat was trusted), else none."""
    if not paths:
        return b""
    rows = (table.get(path, old) for path, old in zip(paths, kept or repeat(NO_STAT), strict=False))
    return zlib.compress(bytes.fromhex(manifest_hash) + b"".join(rows), 1)


class StatTable:
    """A packed table read back: the manifest's hash, and its entries' `FileStat`s made one at
    a time as they are iterated."""

    def __init__(self, data: bytes, count: int) -> None:
        self.manifest_hash = data[:32].hex()
        self.count = count
        self._data = data

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[FileStat]:
        data, end = self._data, 32 + _SLOT * self.count
        return (data[at : at + _SLOT] for at in range(32, end, _SLOT))


def stats_unpack(packed: bytes) -> StatTable | None:
    """A packed table; None when there is none (every file is then read)."""
    try:
        data = zlib.decompress(packed) if packed else b""
    except zlib.error:
        return None
    count, rest = divmod(len(data) - 32, _SLOT)
    return StatTable(data, count) if count > 0 and not rest else None


@dataclass(frozen=True)
class Known:
    """What the current snapshot was read from: its manifest's bytes (b"" when not loaded: a
    local source whose `stats` name the manifest's hash) and name, its accepted entries
    (`entries_pack`; empty for a snapshot stored before they were kept), and the stats of
    their files (`stats_pack`; empty when none were kept)."""

    manifest: bytes
    name: str
    entries: bytes
    stats: bytes = b""


@dataclass
class RawCheck:
    """One raw pass over a source: its digest, the manifest's name, the validators the next
    read can ask with, and (when kept) what each request answered."""

    digest: str
    name: str
    validators: dict[str, Validator]
    # the entries' file stats to keep (`stats_pack`), when they differ from the known ones
    stats: bytes | None = None
    # key -> (body span or None for a 304, the validator) or the fetch's rejection
    answers: dict[str, Any] = field(default_factory=dict)
    bodies: ByteSpool = field(default_factory=ByteSpool)

    def close(self) -> None:
        self.answers = {}
        self.bodies.close()


def raw_check(
    fetcher: Fetcher,
    *,
    known: Known,
    validators: Mapping[str, Validator],
    keep: bool = False,
) -> RawCheck:
    """Fetch the manifest and every entry's raw bytes (conditionally where a validator is
    stored), hash them, parse nothing: the manifest only when its bytes are not the known
    ones. `keep`: remember every answer (bodies in a temporary file) so a full read that
    follows fetches nothing twice (`Replay`). Raises SourceError when the source as a whole
    fails, as the full read would."""
    policy: FetchPolicy = fetcher.policy  # type: ignore[attr-defined]
    manifest_key = fetcher.manifest_key()
    got = fetcher.get_manifest(validators.get(manifest_key))
    manifest_body = got.body if got.body is not None else known.manifest
    # a transport that has no validators to ask with may hash a body without the objects
    # around it (LocalFetcher.raw_hash), or take it from the file's stat (its `stats`)
    hashing = not (validators or keep) and hasattr(fetcher, "raw_hash")
    stats: dict[str, FileStat] | None = getattr(fetcher, "stats", None)
    stats = stats if hashing and policy.trust_stat else None
    table = stats_unpack(known.stats) if stats is not None else None
    if table is not None:
        same = table.manifest_hash == om.content_hash(manifest_body)
    else:
        same = bool(known.manifest) and manifest_body == known.manifest
    same = same and bool(known.entries)
    if same:
        # the same bytes: the same entries (under other rules the digest differs anyway)
        name, entries = known.name, entries_unpack(known.entries)
    else:
        try:
            manifest = om.parse_manifest(
                manifest_body, max_bytes=policy.max_manifest_bytes, max_entries=policy.max_entries
            )
        except om.ManifestError as exc:
            raise SourceError(exc.code, f"invalid manifest: {exc.message}") from exc
        name, entries = manifest.name, [(e.id, e.path) for e in manifest.entries]
    check = RawCheck("", name, {})
    if keep:
        check.answers[manifest_key] = (check.bodies.add(manifest_body), got.validator)
    if got.validator.etag or got.validator.last_modified:
        check.validators[manifest_key] = got.validator
    digest = RawDigest(policy, manifest_body)
    # the kept stats, when they are these entries'
    kept = table if same and table is not None and len(table) == len(entries) else None
    try:
        if hashing:
            _hash_files(digest, entries, fetcher, kept)
        else:
            for entry_id, path in entries:
                key = fetcher.record_key(path)
                try:
                    got = fetcher.get_record(path, validators.get(key))
                except om.Rejection as exc:
                    digest.refused(entry_id, path, exc)
                    if keep:
                        check.answers[key] = exc
                    continue
                if got.validator.etag or got.validator.last_modified:
                    check.validators[key] = got.validator
                if got.body is None:  # 304: the stored validator's hash is the body's
                    body_hash = got.validator.content_hash or "unknown"
                else:
                    body_hash = got.validator.content_hash or om.content_hash(got.body)
                digest.body(entry_id, path, body_hash)
                if keep:
                    span = None if got.body is None else check.bodies.add(got.body)
                    check.answers[key] = (span, got.validator)
    except BaseException:
        check.close()
        raise
    check.digest = digest.hexdigest()
    if stats:
        # some file was read (`stats` has each one read): keep what its stat is now, or that
        # it has none to trust; the refresh keeps them when the digest is the snapshot's
        paths = [path for _, path in entries]
        packed = stats_pack(om.content_hash(manifest_body), paths, stats, kept)
        check.stats = packed if packed != known.stats else None
    return check


def _hash_files(
    digest: RawDigest, entries: Sequence[Sequence[str]], fetcher: Any, kept: StatTable | None
) -> None:
    """Feed each entry's body hash to the digest: the kept hash where the file's stat is the
    kept one (`fetcher.kept_hashes`), else the hash of its bytes (`fetcher.raw_hash`)."""
    answers = fetcher.kept_hashes([e[1] for e in entries], kept) if kept else repeat(None)
    line = digest.line
    for (entry_id, path), answer in zip(entries, answers, strict=False):
        if answer is None:
            try:
                answer = fetcher.raw_hash(path)
            except om.Rejection as exc:
                digest.refused(entry_id, path, exc)
                continue
        line(f"\n{entry_id}\0{path}\0{answer}")


class Replay:
    """The fetcher, answering first from a kept `RawCheck`: a body it fetched answers any
    request for its key once; a 304 answers the same conditional request; anything else goes
    to the fetcher itself."""

    def __init__(self, fetcher: Fetcher, check: RawCheck) -> None:
        self._fetcher = fetcher
        self._check = check
        self.kind = fetcher.kind
        self.identity = fetcher.identity
        self.policy = fetcher.policy  # type: ignore[attr-defined]

    def manifest_key(self) -> str:
        return self._fetcher.manifest_key()

    def record_key(self, path: str) -> str:
        return self._fetcher.record_key(path)

    def _answer(self, key: str, validator: Validator | None) -> Fetched | None:
        answer = self._check.answers.pop(key, None)
        if isinstance(answer, om.Rejection):
            raise answer
        if answer is None:
            return None
        span, got = answer
        if span is not None:
            return Fetched(self._check.bodies.get(span), got)
        if validator is not None and (validator.etag, validator.last_modified) == (
            got.etag,
            got.last_modified,
        ):
            return Fetched(None, validator)
        return None

    def get_manifest(self, validator: Validator | None) -> Fetched:
        answer = self._answer(self.manifest_key(), validator)
        return answer if answer is not None else self._fetcher.get_manifest(validator)

    def get_record(self, path: str, validator: Validator | None) -> Fetched:
        answer = self._answer(self.record_key(path), validator)
        return answer if answer is not None else self._fetcher.get_record(path, validator)

    def close(self) -> None:
        self._check.close()
        self._fetcher.close()
