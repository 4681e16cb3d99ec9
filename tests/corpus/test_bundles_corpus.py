"""Hostile MemoryAI bundles through POST /v1/brain/import and /import/file.

Every answer is a 4xx with the one error shape, or a 200 report that counts and explains each
skipped record — never a 500. A refused envelope writes nothing (brain counts unchanged).
"""

from __future__ import annotations

import copy
import io
import json
import tracemalloc
from typing import Any

import pytest
from django.test import RequestFactory
from django.test.client import ClientHandler

from bundles.models import Agent, Chunk, Entity, L2Session, MemoryEdge, MoodState
from memoryadmin.models import AuditEvent, Scope
from tests.bundles.helpers import chunk, embedding, make_bundle
from tests.corpus.hostile import ZeroStream, deep_json, deep_json_object


def _counts(team) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    return (
        Chunk.objects.filter(team=team).count(),
        MemoryEdge.objects.filter(team=team).count(),
        Entity.objects.filter(team=team).count(),
    )


@pytest.fixture
def importer(team, token_client):  # type: ignore[no-untyped-def]
    client = token_client(team, [Scope.BUNDLES_IMPORT, Scope.BUNDLES_EXPORT])
    client.post(
        "/v1/brain/import",
        json.dumps(make_bundle(chunks=[chunk(1, "already here")])),
        content_type="application/json",
    )
    return client


def _post(client, body: bytes, *, as_file: bool = False):  # type: ignore[no-untyped-def]
    if as_file:
        upload = io.BytesIO(body)
        upload.name = "bundle.json"
        return client.post("/v1/brain/import/file", {"file": upload}, format="multipart")
    return client.post("/v1/brain/import", body, content_type="application/json")


def _good() -> dict[str, Any]:
    return make_bundle(chunks=[chunk(5, "fresh one", embedding=embedding([1, 2, 3]))])


def _envelope_cases() -> dict[str, bytes]:
    good = _good()
    cases: dict[str, bytes] = {
        "deep-array": deep_json(),
        "deep-object": deep_json_object(),
        "not-json": b"{nope",
        "invalid-utf8": b'{"format": "memoryai-bundle", "x": "\xff\xfe"}',
        "nul": b'{"format": "memoryai-bundle"\x00}',
        "top-level-list": b"[]",
        "empty": b"",
        "nan-manifest": json.dumps(good)
        .replace('"embedding_dim": 3', '"embedding_dim": NaN')
        .encode(),
        "infinity-dim": json.dumps(good)
        .replace('"embedding_dim": 3', '"embedding_dim": Infinity')
        .encode(),
    }
    for field in ("format", "version", "manifest", "chunks"):
        for wrong in (None, 1.5, "x", [], {}, True):
            bundle = copy.deepcopy(good)
            bundle[field] = wrong
            if bundle[field] == good[field]:
                continue
            cases[f"{field}={json.dumps(wrong)}"] = json.dumps(bundle).encode()
    for field in ("scope", "embedding_model", "embedding_dim"):
        for wrong in (None, -1, "x", [], {}, 1e308, True):
            bundle = copy.deepcopy(good)
            bundle["manifest"][field] = wrong
            cases[f"manifest.{field}={json.dumps(wrong)}"] = json.dumps(bundle).encode()
    return cases


ENVELOPES = _envelope_cases()


@pytest.mark.parametrize("as_file", [False, True], ids=["body", "file"])
@pytest.mark.parametrize("case", sorted(ENVELOPES))
def test_it_answers_a_hostile_envelope_with_a_4xx_or_a_full_report(importer, team, case, as_file):
    before = _counts(team)
    response = _post(importer, ENVELOPES[case], as_file=as_file)
    assert response.status_code < 500, response.content[:300]
    if response.status_code >= 400:
        error = response.json()["error"]
        assert error["code"] and error["message"]
        assert _counts(team) == before, "a refused bundle wrote something"
    else:
        # Accepted envelope (a lenient field): every chunk is imported or explained.
        report = response.json()
        assert report, report


def _record_cases() -> dict[str, dict[str, Any]]:
    cases: dict[str, dict[str, Any]] = {}
    base = chunk(7, "record under test", embedding=embedding([1, 0, 0]))
    for field in (
        "id",
        "content",
        "content_hash",
        "memory_type",
        "embedding",
        "tags",
        "zone",
        "importance",
        "is_pinned",
        "decay_score",
        "created_at",
        "valid_until",
        "metadata",
    ):
        for wrong in (None, 1.5, "x" * 3, [1], {"a": 1}, True, -1, "NaN"):
            record = dict(base)
            record[field] = wrong
            cases[f"{field}={json.dumps(wrong)}"] = record
    cases["base64-short"] = {**base, "embedding": embedding([1, 0])}
    cases["base64-long"] = {**base, "embedding": embedding([1, 0, 0, 0])}
    cases["base64-garbage"] = {**base, "embedding": "!!!not base64!!!"}
    cases["base64-padding"] = {**base, "embedding": embedding([1, 0, 0]).rstrip("=") + "A"}
    cases["forged-hash"] = {**base, "content_hash": "0" * 64}
    cases["huge-content"] = {**base, "content": "x" * 2_000_000}
    return cases


RECORDS = _record_cases()


@pytest.mark.parametrize("case", sorted(RECORDS))
def test_it_imports_or_explains_every_hostile_record(importer, team, case):
    record = RECORDS[case]
    body = json.dumps(make_bundle(chunks=[record, chunk(8, "good neighbour")]), allow_nan=True)
    response = _post(importer, body.encode())
    assert response.status_code < 500, response.content[:300]
    if response.status_code >= 400:
        assert response.json()["error"]["code"]
        return
    assert Chunk.objects.filter(team=team, content="good neighbour").exists()
    text = json.dumps(response.json())
    imported = Chunk.objects.filter(team=team, content=record.get("content")).exists()
    assert imported or "invalid" in text or "skipped" in text or "warning" in text, text[:500]


def test_it_never_lets_a_forged_hash_shadow_another_chunk(importer, team):
    forged = chunk(9, "new text", content_hash=Chunk.objects.get(team=team).content_hash)
    response = _post(importer, json.dumps(make_bundle(chunks=[forged])).encode())
    assert response.status_code == 200
    assert set(Chunk.objects.filter(team=team).values_list("content", flat=True)) == {
        "already here",
        "new text",
    }


def test_it_handles_duplicate_keys_and_mismatched_counts(importer, team):
    good = json.dumps(_good())
    duplicated = good.replace(
        '"format": "memoryai-bundle"', '"format": "x", "format": "memoryai-bundle"'
    )
    response = _post(importer, duplicated.encode())
    assert response.status_code < 500
    counted = _good()
    counted["manifest"]["counts"] = {"chunks": 1000}
    counted["manifest"]["chunk_count"] = 1000
    response = _post(importer, json.dumps(counted).encode())
    assert response.status_code < 500
    edges = make_bundle(
        chunks=[chunk(1, "a")],
        edges=[{"chunk_a": 1, "chunk_b": 999, "edge_type": "causal", "weight": 1.0}],
    )
    response = _post(importer, json.dumps(edges).encode())
    assert response.status_code == 200 and MemoryEdge.objects.filter(team=team).count() == 0


def test_it_refuses_10000_invalid_records_without_writing_them(importer, team):
    chunks = [{"id": i, "content": None, "memory_type": "fact"} for i in range(10_000)]
    before = _counts(team)
    response = _post(importer, json.dumps(make_bundle(chunks=chunks)).encode())
    assert response.status_code < 500
    assert _counts(team) == before


def _stream_post(team_token: str, path: str, size: int, content_type: str, **extra: str):  # type: ignore[no-untyped-def]
    """Call the real WSGI handler with a generated body; return (response, bytes read, peak)."""
    stream = ZeroStream(size, prefix=b'{"format": "memoryai-bundle", "x": "')
    environ = RequestFactory()._base_environ(
        PATH_INFO=path,
        REQUEST_METHOD="POST",
        CONTENT_TYPE=content_type,
        CONTENT_LENGTH=str(size),
        HTTP_AUTHORIZATION=f"Bearer {team_token}",
        **{"wsgi.input": stream},
        **extra,
    )
    tracemalloc.start()
    try:
        response = ClientHandler(enforce_csrf_checks=False)(environ)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return response, stream.taken, peak


@pytest.mark.parametrize("path", ["/v1/brain/import", "/v1/brain/import/file"])
def test_it_refuses_a_100_mb_body_without_reading_it(team, make_token, settings, path):
    settings.BUNDLE_MAX_BYTES = 16 * 1024 * 1024
    token = make_token(team, [Scope.BUNDLES_IMPORT])
    kind = "application/json" if path.endswith("import") else "multipart/form-data; boundary=xx"
    before = _counts(team)
    _stream_post(token, path, 100 * 1024 * 1024, kind)  # warm-up: first-request imports
    response, taken, peak = _stream_post(token, path, 100 * 1024 * 1024, kind)
    print(f"measured: taken={taken} peak={peak}")
    assert response.status_code == 413, response.content[:300]
    assert taken < 1024 * 1024, f"read {taken} bytes of a refused body"
    assert peak < 8 * 1024 * 1024, f"peak Python allocation {peak}"
    assert _counts(team) == before


def test_it_stops_reading_at_the_limit_when_the_length_is_within_the_slack(
    team, make_token, settings
):
    """Content-Length just over the limit (inside the multipart slack): the stream is cut."""
    settings.BUNDLE_MAX_BYTES = 4 * 1024 * 1024
    settings.BUNDLE_SYNC_IMPORT_MAX_BYTES = 1024 * 1024
    token = make_token(team, [Scope.BUNDLES_IMPORT])
    response, taken, peak = _stream_post(
        token, "/v1/brain/import", 4 * 1024 * 1024 + 60_000, "application/json"
    )
    print(f"measured: taken={taken} peak={peak}")
    assert response.status_code == 413, response.content[:300]
    assert taken <= 4 * 1024 * 1024 + 128 * 1024
    assert peak < 4 * 1024 * 1024, f"peak Python allocation {peak}"


# ------------------------------------------------------------------- text, times, counters
# Every string field of every record kind holding NUL or a lone surrogate, every timestamp
# outside years 1-9999 in UTC, counters past the column: never a 500, never a partial write
# (the bad record alone is skipped; a bad envelope writes nothing).

MAX_COUNTER = 2**63 - 1
BAD_TEXT = {"nul": "x\u0000y", "surrogate": "x\udc80y"}
BAD_TIMES = {
    "before-year-1": "0001-01-01T00:00:00+14:00",
    "after-9999": "9999-12-31T23:00:00-05:00",
}
GOOD_KEYED = {
    "l2_sessions": {"id": 1, "summary": "good session"},
    "mood_states": {"key": "good", "valence": 0.2},
    "agents": {"name": "good agent", "persona": "terse"},
}
BASE_RECORDS: dict[str, dict[str, Any]] = {
    "chunks": chunk(30, "the record under test", tags=["t"], metadata={"k": {"n": ["v"]}}),
    "memory_edges": {
        "chunk_a": 21,
        "chunk_b": 22,
        "edge_type": "causal",
        "weight": 0.3,
        "co_activation_count": 1,
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
    },
    "entities": {"name": "bad one", "frequency": 1, "first_seen": "2026-01-01T00:00:00Z"},
    "l2_sessions": {"id": 2, "summary": "s", "turns": [{"who": "me", "said": "hi"}]},
    "mood_states": {"key": "bad", "valence": 0.1, "extra": {"deep": ["v"]}},
    "agents": {"name": "bad agent", "persona": "p", "tools": {"git": "yes"}},
}
# Where each record kind holds strings: a top-level field, or a path into nested JSON
# ("*key" replaces a key there instead of a value).
STRING_PLACES: dict[str, list[tuple[str, ...]]] = {
    "chunks": [
        ("content",),
        ("content_hash",),
        ("memory_type",),
        ("embedding_model",),
        ("zone",),
        ("tier",),
        ("tags", "0"),
        ("metadata", "k", "n", "0"),
        ("metadata", "k", "*key"),
        ("metadata", "*key"),
    ],
    "memory_edges": [("edge_type",)],
    "entities": [("name",)],
    "l2_sessions": [("summary",), ("turns", "0", "said"), ("turns", "0", "*key"), ("*key",)],
    "mood_states": [("key",), ("extra", "deep", "0"), ("extra", "*key"), ("*key",)],
    "agents": [("name",), ("persona",), ("tools", "git"), ("tools", "*key"), ("*key",)],
}
TIME_FIELDS = {
    "chunks": ("created_at", "accessed_at", "valid_until"),
    "memory_edges": ("created_at", "updated_at"),
    "entities": ("first_seen", "last_seen"),
}
MODELS = {
    "chunks": Chunk,
    "memory_edges": MemoryEdge,
    "entities": Entity,
    "l2_sessions": L2Session,
    "mood_states": MoodState,
    "agents": Agent,
}


def _put(record: dict[str, Any], place: tuple[str, ...], bad: str) -> dict[str, Any]:
    record = copy.deepcopy(record)
    target: Any = record
    for step in place[:-1]:
        target = target[int(step)] if isinstance(target, list) else target[step]
    last = place[-1]
    if last == "*key":
        target[f"k{bad}"] = "v"
    elif isinstance(target, list):
        target[int(last)] = bad
    else:
        target[last] = bad
    return record


def _tainted_cases() -> dict[str, tuple[str, dict[str, Any]]]:
    cases: dict[str, tuple[str, dict[str, Any]]] = {}
    for section, places in STRING_PLACES.items():
        for place in places:
            for name, bad in BAD_TEXT.items():
                label = f"{section}.{'.'.join(place)}={name}"
                cases[label] = (section, _put(BASE_RECORDS[section], place, bad))
    for section, fields in TIME_FIELDS.items():
        for field_name in fields:
            for name, value in BAD_TIMES.items():
                record = {**BASE_RECORDS[section], field_name: value}
                cases[f"{section}.{field_name}={name}"] = (section, record)
    for section, field_name in (("memory_edges", "co_activation_count"), ("entities", "frequency")):
        record = {**BASE_RECORDS[section], field_name: MAX_COUNTER + 1}
        cases[f"{section}.{field_name}=2^63"] = (section, record)
    return cases


TAINTED = _tainted_cases()


def _bundle_with(section: str, bad: dict[str, Any]) -> bytes:
    """Good records in every section, plus the bad one; no checksum (it is not the point)."""
    sections: dict[str, list[dict[str, Any]]] = {
        "chunks": [chunk(21, "good twenty-one"), chunk(22, "good twenty-two")],
        "memory_edges": [{"chunk_a": 21, "chunk_b": 22, "edge_type": "good"}],
        "entities": [{"name": "good entity"}],
        **{name: [record] for name, record in GOOD_KEYED.items()},
    }
    sections[section] = [*sections[section], bad]
    bundle = make_bundle(**sections)
    bundle["manifest"].pop("checksum")
    return json.dumps(bundle).encode()  # ensure_ascii: a lone surrogate travels as \udc80


def _all_counts(team) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {name: model.objects.filter(team=team).count() for name, model in MODELS.items()}


@pytest.mark.parametrize("as_file", [False, True], ids=["body", "file"])
@pytest.mark.parametrize("case", sorted(TAINTED))
def test_it_skips_just_the_record_with_bad_text_a_bad_time_or_a_counter_past_the_column(
    importer, team, case, as_file
):
    section, bad = TAINTED[case]
    before = _all_counts(team)
    response = _post(importer, _bundle_with(section, bad), as_file=as_file)
    assert response.status_code == 200, response.content[:300]
    report = response.json()["report"]
    assert any("skipped" in w for w in report["warnings"]), report["warnings"]
    after = _all_counts(team)
    good = {"chunks": 2, "memory_edges": 1, "entities": 1, **dict.fromkeys(GOOD_KEYED, 1)}
    assert after == {name: before[name] + good[name] for name in MODELS}, case
    assert _post(importer, b'{"scope": "full"}').status_code < 500  # unrelated: still a 4xx
    export = importer.post("/v1/brain/export/stream", {"scope": "full"}, format="json")
    assert export.status_code == 200 and b"".join(export.streaming_content)


def _envelope_text_cases() -> dict[str, bytes]:
    cases: dict[str, bytes] = {}
    for name, bad in {**BAD_TEXT, **BAD_TIMES}.items():
        places: list[tuple[str, ...]] = [("manifest", "since")]
        if name in BAD_TEXT:
            places += [
                ("manifest", "checksum"),
                ("manifest", "tenant_name"),
                ("manifest", "tenant_plan"),
                ("manifest", "embedding_model"),
                ("manifest", "counts", "*key"),
                ("manifest", "*key"),
                ("generator",),
                ("exported_at",),
                ("*key",),
            ]
        for place in places:
            bundle = make_bundle(chunks=[chunk(40, "must not land")])
            bundle["manifest"]["counts"] = dict(bundle["manifest"]["counts"])
            cases[f"{'.'.join(place)}={name}"] = json.dumps(_put(bundle, place, bad)).encode()
    return cases


ENVELOPE_TEXT = _envelope_text_cases()


@pytest.mark.parametrize("as_file", [False, True], ids=["body", "file"])
@pytest.mark.parametrize("case", sorted(ENVELOPE_TEXT))
def test_it_refuses_an_envelope_with_bad_text_or_a_bad_time_and_writes_nothing(
    importer, team, case, as_file
):
    before = _all_counts(team)
    response = _post(importer, ENVELOPE_TEXT[case], as_file=as_file)
    assert response.status_code == 422, response.content[:300]
    assert response.json()["error"]["code"] in ("field-nul", "field-surrogate", "timestamp-range")
    assert _all_counts(team) == before
    assert AuditEvent.objects.filter(team=team, action="bundle.import_failed").exists()


@pytest.mark.parametrize("as_file", [False, True], ids=["body", "file"])
def test_it_saturates_counters_that_would_overflow_the_column(importer, team, as_file):
    twice = {
        "memory_edges": [{"chunk_a": 21, "chunk_b": 22, "co_activation_count": MAX_COUNTER}] * 2,
        "entities": [{"name": "often", "frequency": MAX_COUNTER}] * 2,
    }
    bundle = make_bundle(chunks=[chunk(21, "a"), chunk(22, "b")], edges=twice["memory_edges"])
    bundle["entities"] = twice["entities"]
    bundle["manifest"].pop("checksum")
    for _ in range(2):  # within one bundle, then against the stored rows
        response = _post(importer, json.dumps(bundle).encode(), as_file=as_file)
        assert response.status_code == 200, response.content[:300]
        warnings = response.json()["report"]["warnings"]
        assert any("largest co_activation_count" in w for w in warnings)
        assert any("largest frequency" in w for w in warnings)
    assert MemoryEdge.objects.get(team=team).co_activation_count == MAX_COUNTER
    assert Entity.objects.get(team=team, name="often").frequency == MAX_COUNTER
