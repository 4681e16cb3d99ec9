"""OpenMemories 0.1: parse and validate records and manifests, and select the active records.

No Django import. `from formats import openmemories as om` reads every public name here:
`model` (constants and result types), `text` (string faults, timestamps, URIs), `records`
(record files), `manifest` (memories.json and its paths) and `selection` (expiry and
replacement).

A change to what these rules accept, reject or produce must bump
`sources.fetchers.raw.READER_VERSION`: an unchanged refresh is decided from the raw bytes
alone, so a snapshot stored under the old rules would otherwise be kept as if read under the
new ones.
"""

from __future__ import annotations

from formats.openmemories.manifest import (
    load_manifest_json,
    parse_manifest,
    path_problem,
)
from formats.openmemories.model import (
    ABSOLUTE_URI_RE,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_MAX_MANIFEST_BYTES,
    DEFAULT_MAX_RECORD_BYTES,
    ENTRY_KEYS,
    KINDS,
    KNOWN_FIELDS,
    MANIFEST_KEYS,
    MAX_TITLE_CHARS,
    OPTIONAL_FIELDS,
    PROVENANCE_KEYS,
    REQUIRED_FIELDS,
    SCHEME_RE,
    SURROGATE_RE,
    TIMESTAMP_RE,
    VERSION,
    Entry,
    Manifest,
    ManifestError,
    Problem,
    Record,
    Rejection,
    Selection,
    content_hash,
)
from formats.openmemories.records import (
    parse_record,
)
from formats.openmemories.selection import (
    select,
    select_by_id,
)
from formats.openmemories.text import (
    STRING_FAULTS,
    format_timestamp,
    is_absolute_uri,
    mapping_problem,
    parse_timestamp,
    string_fault,
    string_problem,
)

__all__ = [
    "ABSOLUTE_URI_RE",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_MAX_MANIFEST_BYTES",
    "DEFAULT_MAX_RECORD_BYTES",
    "ENTRY_KEYS",
    "KINDS",
    "KNOWN_FIELDS",
    "MANIFEST_KEYS",
    "MAX_TITLE_CHARS",
    "OPTIONAL_FIELDS",
    "PROVENANCE_KEYS",
    "REQUIRED_FIELDS",
    "SCHEME_RE",
    "STRING_FAULTS",
    "SURROGATE_RE",
    "TIMESTAMP_RE",
    "VERSION",
    "Entry",
    "Manifest",
    "ManifestError",
    "Problem",
    "Record",
    "Rejection",
    "Selection",
    "content_hash",
    "format_timestamp",
    "is_absolute_uri",
    "load_manifest_json",
    "mapping_problem",
    "parse_manifest",
    "parse_record",
    "parse_timestamp",
    "path_problem",
    "select",
    "select_by_id",
    "string_fault",
    "string_problem",
]
