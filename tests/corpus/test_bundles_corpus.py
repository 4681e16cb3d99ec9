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

from bundles.models import Chunk, Entity, MemoryEdge
from memoryadmin.models import Scope
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
