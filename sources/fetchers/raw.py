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
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from formats import openmemories as om
from sources.fetchers import Fetched, Fetcher, FetchPolicy, SourceError, Validator

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

    def body(self, entry: om.Entry, body_hash: str) -> None:
        self._hash.update(f"\n{entry.id}\0{entry.path}\0{body_hash}".encode())

    def refused(self, entry: om.Entry, rejection: om.Rejection) -> None:
        """The fetch itself refused the entry (missing, outside the source, too large)."""
        reason = f"{rejection.code}\0{rejection.message}"
        self._hash.update(f"\n{entry.id}\0{entry.path}\0!{reason}".encode())

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


class BodySpool:
    """Fetched bodies in an unlinked temporary file, so a check that keeps them for the full
    read holds their offsets only."""

    def __init__(self) -> None:
        self._file: Any = None
        self._size = 0

    def add(self, data: bytes) -> tuple[int, int]:
        if self._file is None:
            self._file = tempfile.TemporaryFile(buffering=0)  # noqa: SIM115
        view = memoryview(data)
        while view:
            view = view[self._file.write(view) :]
        span = (self._size, len(data))
        self._size += len(data)
        return span

    def get(self, span: tuple[int, int]) -> bytes:
        if not span[1]:
            return b""
        return os.pread(self._file.fileno(), span[1], span[0])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclass
class RawCheck:
    """One raw pass over a source: its digest, the parsed manifest (its name), the validators
    the next read can ask with, and (when kept) what each request answered."""

    digest: str
    manifest: om.Manifest
    validators: dict[str, Validator]
    # key -> (body span or None for a 304, the validator) or the fetch's rejection
    answers: dict[str, Any] = field(default_factory=dict)
    bodies: BodySpool = field(default_factory=BodySpool)

    def close(self) -> None:
        self.answers = {}
        self.bodies.close()


def raw_check(
    fetcher: Fetcher,
    *,
    previous_manifest: bytes,
    validators: Mapping[str, Validator],
    keep: bool = False,
) -> RawCheck:
    """Fetch the manifest and every entry's raw bytes (conditionally where a validator is
    stored), hash them, parse nothing but the manifest. `keep`: remember every answer (bodies
    in a temporary file) so a full read that follows fetches nothing twice (`Replay`).
    Raises SourceError when the source as a whole fails, as the full read would."""
    policy: FetchPolicy = fetcher.policy  # type: ignore[attr-defined]
    manifest_key = fetcher.manifest_key()
    got = fetcher.get_manifest(validators.get(manifest_key))
    manifest_body = got.body if got.body is not None else previous_manifest
    try:
        manifest = om.parse_manifest(
            manifest_body, max_bytes=policy.max_manifest_bytes, max_entries=policy.max_entries
        )
    except om.ManifestError as exc:
        raise SourceError(exc.code, f"invalid manifest: {exc.message}") from exc
    check = RawCheck("", manifest, {})
    if keep:
        check.answers[manifest_key] = (check.bodies.add(manifest_body), got.validator)
    if got.validator.etag or got.validator.last_modified:
        check.validators[manifest_key] = got.validator
    digest = RawDigest(policy, manifest_body)
    try:
        for entry in manifest.entries:
            key = fetcher.record_key(entry.path)
            try:
                got = fetcher.get_record(entry.path, validators.get(key))
            except om.Rejection as exc:
                digest.refused(entry, exc)
                if keep:
                    check.answers[key] = exc
                continue
            if got.validator.etag or got.validator.last_modified:
                check.validators[key] = got.validator
            if got.body is None:  # 304: the stored validator's hash is the body's
                body_hash = got.validator.content_hash or "unknown"
            else:
                body_hash = got.validator.content_hash or om.content_hash(got.body)
            digest.body(entry, body_hash)
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
