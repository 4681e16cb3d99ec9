"""MemoryAI Protocol v1 envelope: `Manifest`, `Envelope`, `validate_envelope`, whole-bundle
validation, the strict JSON parse, and `build_bundle` (a Level 1 producer). No Django here."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from formats.memoryai.checksum import ChecksumResult, bundle_checksum, verify_checksum
from formats.memoryai.fields import (
    FORMAT,
    GENERATOR,
    MAX_EMBEDDING_DIM,
    MAX_JSON_DEPTH,
    MAX_MODEL_CHARS,
    MAX_VERSION,
    SCOPES,
    SECTIONS,
    BundleError,
    _int,
    _str,
    check_plain_json,
    parse_timestamp,
)
from formats.memoryai.records import validate_record

# --- envelope -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Manifest:
    scope: str
    since: datetime | None
    embedding_model: str
    embedding_dim: int
    counts: dict[str, int]
    checksum: str | None
    tenant_id: Any = None
    tenant_name: str | None = None


@dataclass(frozen=True)
class Envelope:
    format: str
    version: int
    generator: str
    exported_at: str | None
    manifest: Manifest
    # Which sections the bundle carries: "array" or "null" (absent sections are left out).
    sections: dict[str, str] = field(default_factory=dict)


def validate_envelope(bundle: Any) -> Envelope:
    """§3.1. Sections may be placeholders (an empty list) when records are streamed apart."""
    if not isinstance(bundle, dict):
        raise BundleError("not-object", "a bundle must be a JSON object")
    if "format" not in bundle:
        raise BundleError("format-missing", "'format' is required", "format")
    if bundle["format"] != FORMAT:
        raise BundleError(
            "format-invalid", f"'format' must be {FORMAT!r}, not {bundle['format']!r}", "format"
        )
    version = bundle.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise BundleError("version-invalid", "'version' must be an integer >= 1", "version")
    if version > MAX_VERSION:
        raise BundleError(
            "version-unsupported",
            f"bundle version {version} is newer than the highest this server reads ({MAX_VERSION})",
            "version",
        )
    raw = bundle.get("manifest")
    if not isinstance(raw, dict):
        raise BundleError("manifest-missing", "'manifest' must be an object", "manifest")
    for key, value in bundle.items():  # every envelope string, keys and nested values too
        if key not in SECTIONS:  # the key is the error's path: escaped when it is not text
            path = key if key.isascii() and "\x00" not in key else ascii(key)
            check_plain_json({key: value}, path, max_depth=MAX_JSON_DEPTH + 1)
    scope = raw.get("scope")
    if scope not in SCOPES:
        raise BundleError(
            "manifest-invalid", f"'scope' must be one of {', '.join(SCOPES)}", "manifest.scope"
        )
    if "embedding_model" not in raw or "embedding_dim" not in raw:
        raise BundleError(
            "manifest-invalid",
            "'embedding_model' and 'embedding_dim' are required",
            "manifest",
        )
    model = _str(raw, "embedding_model", "manifest", max_len=MAX_MODEL_CHARS)
    dim = _int(raw, "embedding_dim", "manifest", default=0)
    if dim is None or dim > MAX_EMBEDDING_DIM:
        raise BundleError("manifest-invalid", "'embedding_dim' is out of range", "manifest")
    since = parse_timestamp(raw.get("since"), "since", "manifest")
    counts_raw = raw.get("counts") or {}
    if not isinstance(counts_raw, dict):
        raise BundleError("manifest-invalid", "'counts' must be an object", "manifest.counts")
    counts = {
        k: v
        for k, v in counts_raw.items()
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0
    }
    checksum = raw.get("checksum")
    if checksum is not None and not isinstance(checksum, str):
        raise BundleError("manifest-invalid", "'checksum' must be a string", "manifest.checksum")
    for key in ("generator", "exported_at"):
        if bundle.get(key) is not None and not isinstance(bundle[key], str):
            raise BundleError("field-type", f"'{key}' must be a string", key)
    sections: dict[str, str] = {}
    for name in SECTIONS:
        if name not in bundle:
            continue
        value = bundle[name]
        if value is None:
            sections[name] = "null"
        elif isinstance(value, list):
            sections[name] = "array"
        else:
            raise BundleError("section-invalid", f"'{name}' must be an array", name)
    tenant_name = raw.get("tenant_name")
    return Envelope(
        format=FORMAT,
        version=version,
        generator=bundle.get("generator") or "",
        exported_at=bundle.get("exported_at"),
        manifest=Manifest(
            scope=scope,
            since=since,
            embedding_model=model,
            embedding_dim=dim,
            counts=counts,
            checksum=checksum.lower() if isinstance(checksum, str) else None,
            tenant_id=raw.get("tenant_id"),
            tenant_name=tenant_name if isinstance(tenant_name, str) else None,
        ),
        sections=sections,
    )


@dataclass
class BundleCheck:
    """The result of validating a whole in-memory bundle."""

    envelope: Envelope
    records: dict[str, list[Any]]
    errors: list[BundleError]
    checksum: ChecksumResult


def iter_records(bundle: Mapping[str, Any], section: str) -> Iterator[Any]:
    value = bundle.get(section)
    return iter(value) if isinstance(value, list) else iter(())


def validate_bundle(bundle: Any) -> BundleCheck:
    """Validate envelope, every record, and the checksum. Record errors are collected."""
    envelope = validate_envelope(bundle)
    records: dict[str, list[Any]] = {}
    errors: list[BundleError] = []
    for section in SECTIONS:
        valid = records.setdefault(section, [])
        for index, raw in enumerate(iter_records(bundle, section)):
            try:
                valid.append(
                    validate_record(
                        section,
                        raw,
                        embedding_dim=envelope.manifest.embedding_dim,
                        path=f"{section}[{index}]",
                    )
                )
            except BundleError as exc:
                errors.append(exc)
    return BundleCheck(envelope, records, errors, verify_checksum(bundle))


def parse_json(data: bytes | str) -> Any:
    """Strict JSON parse (no NaN/Infinity); BundleError("malformed-json") on any failure."""
    try:
        return json.loads(data, parse_constant=_reject_constant)
    except BundleError:
        raise
    except (ValueError, RecursionError, TypeError) as exc:
        raise BundleError("malformed-json", f"not valid JSON: {exc}") from exc


def _reject_constant(name: str) -> Any:
    raise BundleError("malformed-json", f"{name} is not valid JSON")


def build_bundle(
    *,
    manifest: Mapping[str, Any],
    sections: Mapping[str, list[Any]],
    exported_at: str,
    generator: str = GENERATOR,
) -> dict[str, Any]:
    """A complete bundle with accurate counts and its checksum (Level 1 producer)."""
    bundle: dict[str, Any] = {
        "format": FORMAT,
        "version": MAX_VERSION,
        "generator": generator,
        "exported_at": exported_at,
        "manifest": {
            **manifest,
            "counts": {name: len(sections.get(name, [])) for name in SECTIONS},
        },
    }
    for name in SECTIONS:
        bundle[name] = list(sections.get(name, []))
    bundle["manifest"]["checksum"] = bundle_checksum(bundle)
    return bundle
