"""Hostile OpenMemories sources through the real refresh (local directory and plain HTTP).

A bad record is rejected with its code while the others are served; a bad manifest fails the
refresh visibly and leaves the last good snapshot exactly as it was.
"""

from __future__ import annotations

import json
import os
import resource
import tracemalloc
from pathlib import Path

import pytest
from django.db import transaction

from memoryadmin.audit import Actor
from sources.models import Health, Record, Rejection, RunStatus, Snapshot, Source
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from tests.corpus.hostile import (
    BAD_PATHS,
    LOOKALIKE_PATHS,
    YAML_CASES,
    deep_json,
    deep_json_object,
    streaming_http_server,
)
from tests.sources.helpers import manifest_text, record_text, write_source


def _source(team, root: Path | str) -> Source:  # type: ignore[no-untyped-def]
    with transaction.atomic():
        source = source_add(actor=Actor.system(), team=team, location=str(root))
    return source_approve(actor=Actor.system(), source=source)


def _refresh(source: Source):  # type: ignore[no-untyped-def]
    run = source_refresh(source_id=source.pk)
    source.refresh_from_db()
    return run


def _state(source: Source) -> tuple:
    source.refresh_from_db()
    return (
        source.current_snapshot_id,
        Snapshot.objects.filter(source=source).count(),
        Record.objects.filter(source=source).count(),
        sorted(Record.objects.filter(source=source).values_list("record_id", "body")),
    )


@pytest.fixture
def good(team, tmp_path):  # type: ignore[no-untyped-def]
    root = write_source(tmp_path / "src", {"good": record_text("good")})
    source = _source(team, root)
    assert _refresh(source).status == RunStatus.SUCCEEDED
    return source, root


def _with_bad_record(root: Path, text: bytes | str) -> None:
    data = text.encode("utf-8") if isinstance(text, str) else text
    (root / "records" / "bad.md").write_bytes(data)
    (root / "memories.json").write_text(manifest_text(["good", "bad"]), encoding="utf-8")


def _rejections(source: Source) -> dict[str, str]:
    source.refresh_from_db()
    return dict(
        Rejection.objects.filter(snapshot=source.current_snapshot).values_list("record_id", "code")
    )


HOSTILE_RECORDS: dict[str, tuple[bytes | str, tuple[str, ...]]] = {
    **{
        name: (record_text("bad", extra=fields), (code,) if code else ())
        for name, (fields, code) in YAML_CASES.items()
    },
    "merge-key-plain": (record_text("bad", extra="x-m:\n  <<: {a: 1}\n"), ("yaml-merge-key",)),
    "huge-front-matter": (
        record_text("bad", extra="x-big: '" + "a" * 1_200_000 + "'\n"),
        ("too-large",),
    ),
    "invalid-utf8": (record_text("bad").encode() + b"\xff\xfe\xc0\xaf", ("not-utf8",)),
    "nul-byte": (record_text("bad", body="before\x00after\n"), ("nul-byte",)),
    "no-front-matter": ("just text\n", ("frontmatter-missing",)),
    "unterminated": ("---\nid: bad\n", ("frontmatter-unterminated",)),
    "list-front-matter": ("---\n- a\n- b\n---\nbody\n", ("frontmatter-not-mapping",)),
    "wrong-type-title": (
        record_text("bad").replace("title: 'A record'", "title: [1, 2]"),
        ("bad-type", "bad-title"),
    ),
    "timestamp-object": (
        record_text("bad").replace("created: '2026-01-01T00:00:00Z'", "created: 2026-01-01"),
        ("bad-timestamp", "bad-type"),
    ),
    "id-mismatch": (record_text("someone-else"), ("id-mismatch",)),
    "only-bom": ("\ufeff", ("frontmatter-missing",)),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_RECORDS))
def test_it_rejects_each_hostile_record_and_keeps_serving_the_rest(good, case):
    source, root = good
    text, codes = HOSTILE_RECORDS[case]
    _with_bad_record(root, text)
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED, (run.error_code, run.error)
    active = set(
        Record.objects.filter(source=source, active=True).values_list("record_id", flat=True)
    )
    assert "good" in active
    rejected = _rejections(source)
    if codes:
        assert rejected.get("bad") in codes, rejected
        assert "bad" not in active
    else:
        assert "bad" in active or "bad" in rejected  # accepted, or refused with a code


@pytest.mark.parametrize("path", BAD_PATHS + LOOKALIKE_PATHS)
def test_it_never_reads_outside_the_source_for_a_tricky_path(good, tmp_path, path):
    source, root = good
    (tmp_path / "outside.md").write_text(record_text("bad", title="SECRET OUTSIDE"))
    manifest = {
        "openmemories": "0.1",
        "name": "Test source",
        "memories": [{"id": "good", "path": "records/good.md"}, {"id": "bad", "path": path}],
    }
    (root / "memories.json").write_text(json.dumps(manifest), encoding="utf-8")
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert not Record.objects.filter(source=source, title="SECRET OUTSIDE").exists()
    assert _rejections(source).get("bad") in (
        "nul-byte",
        "bad-path",
        "bad-entry",
        "not-found",
        "outside-source",
    )


def test_it_refuses_symlinks_that_leave_the_source(good, tmp_path):
    source, root = good
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "bad.md").write_text(record_text("bad", title="SECRET OUTSIDE"))
    (outside / "dirbad.md").write_text(record_text("dirbad", title="SECRET OUTSIDE"))
    os.symlink(outside / "bad.md", root / "records" / "bad.md")
    os.symlink(outside, root / "linked")
    manifest = {
        "openmemories": "0.1",
        "name": "Test source",
        "memories": [
            {"id": "good", "path": "records/good.md"},
            {"id": "bad", "path": "records/bad.md"},
            {"id": "dirbad", "path": "linked/dirbad.md"},
        ],
    }
    (root / "memories.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert _refresh(source).status == RunStatus.SUCCEEDED
    assert not Record.objects.filter(source=source, title="SECRET OUTSIDE").exists()
    assert _rejections(source) == {"bad": "outside-source", "dirbad": "outside-source"}


def _manifest_cases() -> dict[str, tuple[bytes, str]]:
    good_entry = '{"id": "good", "path": "records/good.md"}'
    return {
        "duplicate-key": (
            b'{"openmemories": "0.1", "name": "a", "name": "b", "memories": []}',
            "json-duplicate-key",
        ),
        "nan": (
            b'{"openmemories": "0.1", "name": "a", "memories": [], "x-n": NaN}',
            "json-constant",
        ),
        "infinity": (
            b'{"openmemories": "0.1", "name": "a", "memories": [], "x-n": -Infinity}',
            "json-constant",
        ),
        "deep-array": (deep_json(), "json-syntax"),
        "deep-object": (deep_json_object(), "json-syntax"),
        "invalid-utf8": (b'{"openmemories": "0.1", "name": "\xff", "memories": []}', "not-utf8"),
        "not-object": (b"[1, 2, 3]", "manifest-not-object"),
        "memories-not-array": (
            b'{"openmemories": "0.1", "name": "a", "memories": {"id": 1}}',
            "bad-memories",
        ),
        "wrong-version": (b'{"openmemories": 0.1, "name": "a", "memories": []}', ""),
        "truncated": (
            ('{"openmemories": "0.1", "name": "a", "memories": [' + good_entry).encode(),
            "json-syntax",
        ),
        "too-large": (
            b'{"openmemories": "0.1", "name": "a", "memories": [], "x-pad": "'
            + b"a" * 5_000_000
            + b'"}',
            "too-large",
        ),
        "empty": (b"", "json-syntax"),
    }


@pytest.mark.parametrize("case", sorted(_manifest_cases()))
def test_it_fails_a_hostile_manifest_and_keeps_the_last_good_snapshot(good, case):
    source, root = good
    before = _state(source)
    data, code = _manifest_cases()[case]
    (root / "memories.json").write_bytes(data)
    run = _refresh(source)
    assert run.status == RunStatus.FAILED
    if code:
        assert run.error_code == code, run.error
    assert source.health == Health.STALE and source.last_error_code == run.error_code
    assert _state(source) == before


def test_it_reads_a_10000_entry_manifest_and_refuses_one_over_the_limit(good, settings):
    source, root = good
    entries = [{"id": "good", "path": "records/good.md"}] + [
        {"id": f"m{i}", "path": f"records/m{i}.md"} for i in range(9_999)
    ]
    document = {"openmemories": "0.1", "name": "big", "memories": entries}
    (root / "memories.json").write_text(json.dumps(document))
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.rejected_count == 9_999
    assert set(_rejections(source).values()) == {"not-found"}

    settings.SOURCE_MAX_ENTRIES = 5_000
    before = _state(source)
    run = _refresh(source)
    assert run.status == RunStatus.FAILED and run.error_code == "too-many-entries"
    assert _state(source) == before


def test_it_refuses_a_100_mb_http_manifest_while_streaming(team, settings):
    """A 100 MB answer with no Content-Length: the reader stops at the limit, memory stays low."""
    settings.SOURCE_ALLOW_HTTP_LOOPBACK = True
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = True
    with streaming_http_server() as server:
        server.bodies["/src/memories.json"] = (
            100 * 1024 * 1024,
            b'{"openmemories": "0.1", "x-p": "',
        )
        source = _source(team, server.base)  # type: ignore[arg-type]
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        tracemalloc.start()
        try:
            run = _refresh(source)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        rss_growth_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    print(
        f"measured: sent={server.sent['/src/memories.json']} peak={peak} rss_kib={rss_growth_kib}"
    )
    assert run.status == RunStatus.FAILED and run.error_code == "too-large", run.error
    limit = settings.SOURCE_MAX_MANIFEST_BYTES
    assert server.sent["/src/memories.json"] < 100 * 1024 * 1024  # the client hung up early
    assert peak < 3 * limit, f"peak Python allocation {peak} bytes"
    assert rss_growth_kib * 1024 < 4 * limit + 32 * 1024 * 1024
