"""A large import runs in a real Celery worker and ends with the ImportReport."""

from __future__ import annotations

import io
import json
import os

import orjson
import pytest

from bundles.models import Chunk, ImportJob
from tests.bundles.helpers import chunk, make_bundle, sample_bundle
from tests.conftest import wait_for

pytestmark = pytest.mark.worker


def test_it_imports_a_large_bundle_in_the_background(celery_worker, settings, team, token_client):
    settings.BUNDLE_SYNC_IMPORT_MAX_BYTES = 64
    client = token_client(team, ["bundles:import"])
    response = client.generic(
        "POST", "/v1/brain/import", orjson.dumps(sample_bundle()), content_type="application/json"
    )
    assert response.status_code == 202, response.content
    job_url = response.json()["job"]["url"]
    assert (
        response["Location"] == job_url == f"/v1/brain/import/jobs/{response.json()['job']['id']}"
    )

    def finished():
        body = client.get(job_url).json()
        return body if body["state"] in ("succeeded", "failed") else None

    body = wait_for(finished, timeout=60)
    assert body["state"] == "succeeded", body
    assert body["report"]["report"]["chunks"]["inserted"] == 6
    assert body["progress"]["records_done"] == body["progress"]["records_total"] > 0
    assert Chunk.objects.filter(team=team).count() == 6
    job = ImportJob.objects.get(pk=body["id"])
    assert job.scratch_path
    # The worker drops the scratch file just after the success commits (a crash before the
    # commit must leave it for the retry), so a poll can see "succeeded" a moment before.
    assert wait_for(lambda: not os.path.exists(job.scratch_path), timeout=10)


def test_it_fails_a_bad_background_import_whole(celery_worker, settings, team, token_client):
    settings.BUNDLE_SYNC_IMPORT_MAX_BYTES = 64
    client = token_client(team, ["bundles:import"])
    bundle = make_bundle(chunks=[chunk(i, f"memory {i}") for i in range(50)])
    del bundle["mood_states"]
    # Valid chunks are inserted first; mood_states (read last) then breaks the import, which
    # must fail whole and leave nothing behind.
    raw = orjson.dumps(bundle)[:-1] + b',"mood_states":[' + b"[" * 5000 + b"]" * 5000 + b"]}"
    response = client.generic("POST", "/v1/brain/import", raw, content_type="application/json")
    assert response.status_code == 202

    def finished():
        body = client.get(response.json()["job"]["url"]).json()
        return body if body["state"] in ("succeeded", "failed") else None

    body = wait_for(finished, timeout=60)
    assert body["state"] == "failed"
    assert body["error"]["code"] in ("not-serialisable", "malformed-json"), body
    assert Chunk.objects.filter(team=team).count() == 0


def test_it_skips_bad_text_times_and_counters_in_a_background_import(
    celery_worker, settings, team, token_client
):
    """The streamed file reader (bundlefile) meets the same records as the in-memory one."""
    settings.BUNDLE_SYNC_IMPORT_MAX_BYTES = 64
    client = token_client(team, ["bundles:import"])
    big = 2**63 - 1
    bundle = make_bundle(
        chunks=[
            chunk(1, "good one"),
            chunk(2, "good two"),
            chunk(3, "bad metadata key", metadata={"a\u0000": 1}),
            chunk(4, "bad tag", tags=["x\udc80"]),
            chunk(5, "bad time", created_at="0001-01-01T00:00:00+14:00"),
        ],
        edges=[
            {"chunk_a": 1, "chunk_b": 2, "co_activation_count": big},
            {"chunk_a": 1, "chunk_b": 2, "co_activation_count": big},
            {"chunk_a": 2, "chunk_b": 1, "updated_at": "9999-12-31T23:00:00-05:00"},
        ],
        entities=[{"name": "often", "frequency": big}, {"name": "often", "frequency": 5}],
        agents=[{"name": "a\u0000b"}, {"name": "fine"}],
        mood_states=[{"key": "k", "note": "\ud800"}],
    )
    bundle["manifest"].pop("checksum")
    upload = io.BytesIO(json.dumps(bundle).encode())
    upload.name = "big.json"
    response = client.post("/v1/brain/import/file", {"file": upload}, format="multipart")
    assert response.status_code == 202, response.content

    def finished():
        body = client.get(response.json()["job"]["url"]).json()
        return body if body["state"] in ("succeeded", "failed") else None

    body = wait_for(finished, timeout=60)
    assert body["state"] == "succeeded", body
    report = body["report"]["report"]
    assert report["chunks"] == {"inserted": 2, "skipped_duplicate": 0, "skipped_invalid": 3}
    assert report["memory_edges"] == {"upserted": 2, "skipped": 1}
    assert report["agents"] == {"upserted": 1} and report["mood_states"] == {"upserted": 0}
    assert any("largest co_activation_count" in w for w in report["warnings"])
    assert any("largest frequency" in w for w in report["warnings"])
    assert sorted(Chunk.objects.filter(team=team).values_list("content", flat=True)) == [
        "good one",
        "good two",
    ]
