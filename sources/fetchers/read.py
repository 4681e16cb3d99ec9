"""Read a whole source into validated records (`read_source`, stores nothing), and turn what an
administrator typed into a source's kind and identity (`normalize_location`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from formats import openmemories as om
from sources.fetchers import Fetcher, LocationError, SourceError, Validator

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


@dataclass(frozen=True)
class ReadRecord:
    entry: om.Entry
    record: om.Record
    reused: bool  # unchanged since the last snapshot, so it was not parsed again


@dataclass
class ReadResult:
    """Everything one read of a source produced; nothing has been stored yet."""

    identity: str
    manifest: om.Manifest
    manifest_body: bytes
    records: list[ReadRecord]
    rejections: list[om.Rejection]
    selection: om.Selection
    validators: dict[str, Validator]
    parsed: int = 0
    reused: int = 0

    def fingerprint(self) -> str:
        """Equal fingerprints mean an identical snapshot (same manifest and record bytes)."""
        parts = [om.content_hash(self.manifest_body)]
        parts += [f"{r.entry.id}\0{r.entry.path}\0{r.record.content_hash}" for r in self.records]
        parts += [f"{r.code}\0{r.path}\0{r.id}\0{r.message}" for r in self.rejections]
        return om.content_hash("\n".join(parts).encode("utf-8"))


def read_source(
    fetcher: Fetcher,
    *,
    now: datetime,
    previous_records: Mapping[str, om.Record] | None = None,
    previous_manifest: bytes | None = None,
    validators: Mapping[str, Validator] | None = None,
) -> ReadResult:
    """Read and validate a whole source. `previous_records` (path -> record of the last
    snapshot) lets unchanged files skip parsing; `validators` make HTTPS requests conditional.
    Raises SourceError when the source as a whole fails."""
    previous_records = previous_records or {}
    validators = dict(validators or {})
    new_validators: dict[str, Validator] = {}
    manifest_key = fetcher.manifest_key()
    known = validators.get(manifest_key) if previous_manifest is not None else None
    fetched = fetcher.get_manifest(known)
    manifest_body = fetched.body if fetched.body is not None else (previous_manifest or b"")
    new_validators[manifest_key] = fetched.validator
    try:
        manifest = om.parse_manifest(
            manifest_body,
            max_bytes=fetcher.policy.max_manifest_bytes,  # type: ignore[attr-defined]
            max_entries=fetcher.policy.max_entries,  # type: ignore[attr-defined]
        )
    except om.ManifestError as exc:
        raise SourceError(exc.code, f"invalid manifest: {exc.message}") from exc
    records: list[ReadRecord] = []
    rejections: list[om.Rejection] = list(manifest.rejected)
    parsed = reused = 0
    for entry in manifest.entries:
        key = fetcher.record_key(entry.path)
        before = previous_records.get(entry.path)
        old = validators.get(key)
        conditional = (
            old if before is not None and old and old.content_hash == before.content_hash else None
        )
        try:
            got = fetcher.get_record(entry.path, conditional)
            if got.body is None and before is not None:
                new_validators[key] = got.validator
                if before.id == entry.id:
                    records.append(ReadRecord(entry, before, reused=True))
                    reused += 1
                    continue
                got = fetcher.get_record(entry.path, None)
            new_validators[key] = got.validator
            body = got.body or b""
            digest = om.content_hash(body)
            if before is not None and before.content_hash == digest and before.id == entry.id:
                records.append(ReadRecord(entry, before, reused=True))
                reused += 1
                continue
            parsed += 1
            record = om.parse_record(
                body,
                expected_id=entry.id,
                path=entry.path,
                max_bytes=fetcher.policy.max_response_bytes,  # type: ignore[attr-defined]
            )
            records.append(ReadRecord(entry, record, reused=False))
        except om.Rejection as exc:
            rejections.append(
                om.Rejection(exc.code, exc.message, exc.line, entry.path, exc.id or entry.id)
            )
    selection = om.select((item.record for item in records), now=now)
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
    )
