"""The embedding lifecycle: mirrored chunks embedded after commit, lazy re-embedding of dropped
vectors, a model change re-embeds the brain, progress on the Brain page, /healthz and the API."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from bundles.embeddings import model as embedding_model
from bundles.embeddings import store
from bundles.embeddings.lifecycle import brain_embed, embedding_status, pending_chunks
from bundles.imports import bundle_import
from bundles.models import BrainSettings, Chunk
from bundles.services.chunks import brain_settings_set
from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from tests.agents.conftest import approved_source
from tests.bundles.helpers import chunk, embedding, make_bundle, response_json
from tests.semantic.conftest import make_chunk

MODEL, DIM = embedding_model.MODEL_NAME, embedding_model.MODEL_DIM


def _vector(chunk: Chunk) -> np.ndarray:
    chunk.refresh_from_db()
    return np.frombuffer(bytes(chunk.embedding), dtype="<f4")


def test_it_embeds_mirrored_chunks_only_after_the_mirror_commits(
    semantic, team, tmp_path, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        source = approved_source(team, tmp_path / "source")
    mirrored = list(Chunk.objects.filter(team=team, origin="source"))
    assert len(mirrored) == 2 and all(c.embedding is None for c in mirrored)
    for callback in callbacks:
        callback()
    for chunk_ in mirrored:
        chunk_.refresh_from_db()
        assert (chunk_.embedding_model, chunk_.embedding_dim) == (MODEL, DIM)
        expected = embedding_model.encode([chunk_.content])[0]
        assert np.allclose(_vector(chunk_), expected, atol=1e-5)
    assert BrainSettings.objects.get(team=team).embedding_model == MODEL  # adopted
    event = AuditEvent.objects.filter(team=team, action="brain.embed").latest("id")
    assert event.data["embedded"] >= 2 and event.data["model"] == MODEL
    assert source.pk


def test_it_changes_nothing_when_semantic_search_is_off(team, tmp_path, settings):
    settings.SEMANTIC_ENABLED = False
    approved_source(team, tmp_path / "source")
    assert not Chunk.objects.filter(team=team).exclude(embedding=None).exists()
    run = brain_embed(team_id=team.pk)
    assert run.skipped == "semantic off" and run.embedded == 0
    status = embedding_status(team)
    assert status["enabled"] is False and "pip install" in status["text"]


def test_it_reembeds_the_whole_brain_in_batches_when_the_model_changes(
    semantic, team, django_capture_on_commit_callbacks
):
    foreign = np.ones(DIM, dtype="<f4").tobytes()
    chunks = [
        make_chunk(
            team,
            f"Note {i}: the build runs on runner {i}",
            embedding=foreign,
            embedding_model="other-model",
            embedding_dim=DIM,
        )
        for i in range(7)
    ]
    BrainSettings.objects.create(team=team, embedding_model="other-model", embedding_dim=DIM)
    assert pending_chunks(team.pk, MODEL, DIM).count() == 7
    with django_capture_on_commit_callbacks(execute=True):
        brain_settings_set(
            team=team, actor=Actor.system(), embedding_model=MODEL, embedding_dim=DIM
        )
    assert pending_chunks(team.pk, MODEL, DIM).count() == 0
    for chunk_ in chunks:
        assert np.allclose(_vector(chunk_), embedding_model.encode([chunk_.content])[0], atol=1e-5)
    assert embedding_status(team)["text"] == f"embedded 7 of 7 with {MODEL}"


def test_it_stops_when_the_team_model_is_one_it_does_not_run(semantic, team):
    BrainSettings.objects.create(
        team=team, embedding_model="text-embedding-3-small", embedding_dim=3
    )
    make_chunk(team, "Deploys happen on Tuesdays")
    run = brain_embed(team_id=team.pk)
    assert run.embedded == 0 and "does not run here" in run.skipped
    assert "does not run here" in embedding_status(team)["text"]


def test_it_keeps_imported_vectors_of_its_model_and_reembeds_dropped_ones_lazily(
    semantic, team, django_capture_on_commit_callbacks
):
    ours = embedding_model.encode(["a different text entirely"])[0]
    same_model = make_bundle(
        chunks=[chunk(1, "Prefers tabs over spaces", embedding=embedding(ours.tolist()))],
        model=MODEL,
        dim=DIM,
    )
    foreign = make_bundle(
        chunks=[chunk(2, "Deploys happen on Tuesdays", embedding=embedding([1.0, 0.0, 0.0]))],
        model="test-embed",
        dim=3,
    )
    with django_capture_on_commit_callbacks(execute=True):
        bundle_import(team=team, actor=Actor.system(), bundle=same_model)
        result = bundle_import(team=team, actor=Actor.system(), bundle=foreign)
    kept = Chunk.objects.get(team=team, content="Prefers tabs over spaces")
    assert np.allclose(_vector(kept), ours)  # reused, not recomputed
    dropped = Chunk.objects.get(team=team, content="Deploys happen on Tuesdays")
    assert dropped.embedding_model == MODEL
    assert np.allclose(_vector(dropped), embedding_model.encode([dropped.content])[0], atol=1e-5)
    assert any("differs from team model" in w for w in result["report"]["warnings"])


def test_the_brain_page_healthz_and_the_api_say_backend_and_progress(
    semantic, team, client, admin_user, token_client
):
    make_chunk(team, "Deploys happen on Tuesdays")
    make_chunk(team, "Prefers tabs over spaces")
    brain_embed(team_id=team.pk)
    make_chunk(team, "Not embedded yet")
    client.force_login(admin_user)
    page = client.get(f"/t/{team.slug}/brain/").content.decode()
    assert f"embedded 2 of 3 with {MODEL}" in page
    assert store.backend() in page
    health = client.get("/healthz").json()
    assert health["semantic"]["enabled"] is True
    assert health["semantic"]["backend"] in (store.PGVECTOR, store.EXACT)
    assert health["semantic"]["model"] == MODEL
    api = token_client(team, ["context:read"])
    assert api.get("/api/search/", {"q": "deploys"}).json()["ranking"] == "hybrid"
    status = api.get("/api/brain/embeddings/").json()
    assert status == {
        "enabled": True,
        "backend": store.backend(),
        "model": MODEL,
        "dim": DIM,
        "embedded": 2,
        "total": 3,
        "text": f"embedded 2 of 3 with {MODEL}",
    }


def test_the_model_loads_from_its_package_without_any_network():
    script = textwrap.dedent(
        """
        import socket
        def refuse(*args, **kwargs):
            raise OSError("network attempted")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        import django
        django.setup()
        from bundles.embeddings import model
        vectors = model.encode(["hello", "world"])
        assert vectors.shape == (2, 384), vectors.shape
        print("ok")
        """
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    env.pop("HF_HUB_OFFLINE", None)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("ok")


@pytest.mark.parametrize("size", [1, 3])
def test_a_small_batch_size_embeds_everything_in_id_order(semantic, team, size):
    made = [make_chunk(team, f"Fact number {i} about the release train") for i in range(5)]
    run = brain_embed(team_id=team.pk, batch_size=size)
    assert run.embedded == 5
    assert all(_vector(c).shape == (DIM,) for c in made)


def test_an_export_carries_our_vectors_with_the_models_name_and_a_reimport_keeps_them(
    semantic, team, other_team, token_client, django_capture_on_commit_callbacks
):
    made = make_chunk(team, "Deploys happen on Tuesdays")
    brain_embed(team_id=team.pk)
    response = token_client(team, ["bundles:export"]).post(
        "/v1/brain/export", {"scope": "full"}, format="json"
    )
    bundle = response_json(response)
    assert bundle["manifest"]["embedding_model"] == MODEL
    assert bundle["manifest"]["embedding_dim"] == DIM
    (record,) = [c for c in bundle["chunks"] if c["content"] == made.content]
    assert record["embedding_model"] == MODEL
    assert np.allclose(np.frombuffer(base64.b64decode(record["embedding"]), "<f4"), _vector(made))
    with django_capture_on_commit_callbacks(execute=True):
        bundle_import(team=other_team, actor=Actor.system(), bundle=bundle)
    copy = Chunk.objects.get(team=other_team, content=made.content)
    assert bytes(copy.embedding) == bytes(made.embedding)
    assert not AuditEvent.objects.filter(team=other_team, action="brain.embed").exists()
