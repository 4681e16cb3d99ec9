"""A large import runs in a real Celery worker and ends with the ImportReport."""

from __future__ import annotations

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
    assert not (job.scratch_path and __import__("os").path.exists(job.scratch_path))


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
