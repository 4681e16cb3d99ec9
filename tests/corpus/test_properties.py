"""Property tests the app suites did not have yet (no database).

- OpenMemories: arbitrary bytes and YAML-ish text into the record and manifest readers raise
  only their own errors (`Rejection`, `ManifestError`).
- MemoryRail: arbitrary bytes into `parse_memory` / `parse_config` never raise (problems only).
- MemoryAI: arbitrary bytes into `parse_json` raise only `BundleError`; a bundle built by the
  writer from arbitrary chunks validates and keeps its checksum through a JSON round trip.
"""

from __future__ import annotations

import contextlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from formats import memoryai as protocol
from formats import memoryrail
from formats import openmemories as om
from formats.memoryrail.config import ConfigError

YAMLISH = st.sampled_from(
    [
        "---\n",
        "\n",
        ": ",
        "- ",
        "&a ",
        "*a ",
        "!!str ",
        "<<: ",
        "{",
        "}",
        "[",
        "]",
        "'",
        '"',
        "id: x\n",
        "openmemories: '0.1'\n",
        "\x00",
        "\ufeff",
        "\\",
        "#",
        "? ",
        "|\n",
        ">\n",
        "\t",
    ]
)
yamlish_text = st.lists(st.one_of(YAMLISH, st.text(max_size=5)), max_size=60).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=2000), yamlish_text))
def test_it_raises_only_rejections_on_arbitrary_record_bytes(data):
    with contextlib.suppress(om.Rejection):
        om.parse_record(data, expected_id="x", path="records/x.md", max_bytes=4096)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=1000),
        json_values.map(lambda v: json.dumps(v).encode()),
        st.fixed_dictionaries(
            {
                "openmemories": st.sampled_from(["0.1", 0.1, None]),
                "name": json_values,
                "memories": st.lists(
                    st.one_of(
                        json_values,
                        st.fixed_dictionaries({"id": json_values, "path": json_values}),
                    ),
                    max_size=5,
                ),
            }
        ).map(lambda v: json.dumps(v).encode()),
    )
)
def test_it_raises_only_manifest_errors_on_arbitrary_manifests(data):
    with contextlib.suppress(om.ManifestError):
        om.parse_manifest(data, max_bytes=4096, max_entries=3)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=2000), yamlish_text))
def test_it_turns_any_memory_file_into_a_memory_or_problems(data):
    memory, problems = memoryrail.parse_memory(data, path=".memoryrail/memories/x.md")
    assert memory is not None or problems


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=500), json_values.map(lambda v: json.dumps(v).encode())))
def test_it_raises_only_config_errors_on_arbitrary_config(data):
    with contextlib.suppress(ConfigError):
        memoryrail.parse_config(data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_it_raises_only_bundle_errors_on_arbitrary_bytes(data):
    with contextlib.suppress(protocol.BundleError):
        protocol.parse_json(data)


chunk_records = st.fixed_dictionaries(
    {
        # NUL is refused by the reader; the writer is only fed stored (validated) chunks.
        "content": st.text(
            st.characters(exclude_characters="\x00", exclude_categories=("Cs",)),
            min_size=1,
            max_size=50,
        ).filter(str.strip),
        "memory_type": st.sampled_from(["fact", "preference", "episodic", "x_custom"]),
        "importance": st.floats(min_value=0, max_value=1),
        "tags": st.lists(  # tags too, since the reader refuses NUL and lone surrogates there
            st.text(
                st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=8
            ),
            max_size=3,
        ),
    }
)


@settings(max_examples=200, deadline=None)
@given(st.lists(chunk_records, max_size=6))
def test_it_reads_back_every_bundle_it_builds(chunks):
    records = [
        {"id": i, **c, "content_hash": protocol.content_hash(c["content"])}
        for i, c in enumerate(chunks)
    ]
    bundle = protocol.build_bundle(
        manifest={"scope": "full", "embedding_model": "", "embedding_dim": 0},
        sections={"chunks": records},
        exported_at="2026-01-01T00:00:00Z",
        generator="props/1",
    )
    wire = json.dumps(bundle, ensure_ascii=False).encode()
    again = protocol.parse_json(wire)
    protocol.validate_bundle(again)
    assert protocol.bundle_checksum(again) == bundle["manifest"]["checksum"]
    for record in again["chunks"]:
        protocol.validate_record("chunks", record, embedding_dim=0)
