"""What decides that a source is unchanged, from its raw bytes alone (`raw_check`), and a
fetcher that answers a full read from what that check already fetched (`Replay`).

The raw digest is the SHA-256 of the reader's version, the fetch limits that reject records,
the manifest's hash, and each accepted entry's id and path with its body's hash (or the reason
its fetch was refused). Everything else a read produces (records, rejections, problems) is a
function of those bytes under those rules, except expiry, which the refresh applies again at
every read. A snapshot stores the digest of the read that made it (`Snapshot.raw_digest`):
an equal digest means parsing the same bytes again would give the same snapshot.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from formats import openmemories as om
from sources.fetchers import Fetched, Fetcher, FetchPolicy, SourceError, Validator
from sources.fetchers.spool import ByteSpool

# Bump whenever what a read makes of the same bytes changes: the OpenMemories reading rules
# (formats/openmemories: parsing, field checks, rejections, selection) or how read_source
# applies them. A snapshot stored under another version never counts as unchanged; its next
# refresh takes the full read once (which reuses records by hash) and stores the new digest.
READER_VERSION = 1


class RawDigest:
    """The raw digest, fed as a read goes: the manifest first, then each entry in order."""

    def __init__(self, policy: FetchPolicy, manifest_body: bytes) -> None:
        limits = (policy.max_manifest_bytes, policy.max_entries, policy.max_response_bytes)
        head = f"openmemories-reader {READER_VERSION}\0{limits}\n{om.content_hash(manifest_body)}"
        self._hash = hashlib.sha256(head.encode())

    def body(self, entry_id: str, path: str, body_hash: str) -> None:
        self._hash.update(f"\n{entry_id}\0{path}\0{body_hash}".encode())

    def refused(self, entry_id: str, path: str, rejection: om.Rejection) -> None:
        """The fetch itself refused the entry (missing, outside the source, too large)."""
        reason = f"{rejection.code}\0{rejection.message}"
        self._hash.update(f"\n{entry_id}\0{path}\0!{reason}".encode())

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def entries_pack(entries: Iterable[om.Entry]) -> bytes:
    """The manifest's accepted entries, (id, path) in order, as a snapshot keeps them: the
    next raw check of the same manifest bytes reads its files without parsing it again."""
    pairs = [[e.id, e.path] for e in entries]
    return zlib.compress(json.dumps(pairs).encode("ascii"), 1)  # escapes: any id survives


def entries_unpack(packed: bytes) -> list[tuple[str, str]]:
    return [(entry_id, path) for entry_id, path in json.loads(zlib.decompress(packed))]


@dataclass(frozen=True)
class Known:
    """What the current snapshot was read from: its manifest's bytes and name, and its
    accepted entries (`entries_pack`; empty for a snapshot stored before they were kept)."""

    manifest: bytes
    name: str
    entries: bytes


@dataclass
class RawCheck:
    """One raw pass over a source: its digest, the manifest's name, the validators the next
    read can ask with, and (when kept) what each request answered."""

    digest: str
    name: str
    validators: dict[str, Validator]
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
    if known.entries and manifest_body == known.manifest:
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
    # a transport that has no validators to ask with may hash a body without the objects
    # around it (LocalFetcher.raw_hash)
    raw_hash = None if validators or keep else getattr(fetcher, "raw_hash", None)
    try:
        for entry_id, path in entries:
            if raw_hash is not None:
                try:
                    digest.body(entry_id, path, raw_hash(path))
                except om.Rejection as exc:
                    digest.refused(entry_id, path, exc)
                continue
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
    return check


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
