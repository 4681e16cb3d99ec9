"""What the export says about a chunk: every origin of its text (stale only when all are), and
an embedding kept by the user's explicit opt-in, with its own model."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from memoryadmin.audit import Actor
from memoryadmin.models import Scope
from sources.models import Source
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from tests.brain.conftest import export, exported
from tests.bundles.helpers import chunk, embedding, make_bundle
from tests.sources.helpers import record_text, write_source

A = "Deploys go out on Tuesdays\n\nSome body text."


def _source(team, root) -> Source:  # type: ignore[no-untyped-def]
    write_source(root, {"a": record_text("a", title="Deploys go out on Tuesdays")})
    source = source_add(actor=Actor.system(), team=team, location=str(root))
    source_approve(actor=Actor.system(), source=source)
    source_refresh(source_id=source.pk)
    return source


def _break(source: Source, root: Path) -> None:
    """A refresh that fails: the source keeps its records, marked stale."""
    (root / "memories.json").write_text("{not json", encoding="utf-8")
    source_refresh(source_id=source.pk)
    source.refresh_from_db()
    assert source.health == "stale"


def test_it_names_every_origin_and_is_stale_only_when_all_are(team, tmp_path, token_client):
    first = _source(team, tmp_path / "one")
    second = _source(team, tmp_path / "two")
    client = token_client(team, [Scope.BUNDLES_EXPORT])
    _break(
        first, tmp_path / "one"
    )  # the smaller ref (the chunk's owner) goes stale; the other stays fresh

    provenance = exported(client)[A]["metadata"]["memoryadmin"]
    assert [o["ref"] for o in provenance["origins"]] == [
        f"source:{first.pk}:a",
        f"source:{second.pk}:a",
    ]
    assert [o["stale"] for o in provenance["origins"]] == [True, False]
    assert provenance["stale"] is False

    _break(second, tmp_path / "two")
    provenance = exported(client)[A]["metadata"]["memoryadmin"]
    assert provenance["stale"] is True
    response = client.post("/v1/brain/export/stream", {"scope": "full"}, format="json")
    lines = [orjson.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    streamed = next(line["record"] for line in lines if line["kind"] == "chunks")
    assert streamed["metadata"]["memoryadmin"]["stale"] is True
    assert len(streamed["metadata"]["memoryadmin"]["origins"]) == 2


@pytest.mark.parametrize("path", ["/v1/brain/export", "/v1/brain/export/stream"])
def test_it_exports_an_accepted_foreign_embedding_with_its_own_model(team, token_client, path):
    client = token_client(team, [Scope.BUNDLES_IMPORT, Scope.BUNDLES_EXPORT])
    ours = make_bundle(chunks=[chunk(1, "ours", embedding=embedding([1, 0, 0]))], model="ours")
    theirs = make_bundle(
        chunks=[chunk(1, "theirs", embedding=embedding([0, 1, 0]))], model="theirs"
    )
    assert client.post("/v1/brain/import", ours, format="json").status_code == 200
    response = client.post("/v1/brain/import?accept_foreign_embeddings=true", theirs, format="json")
    assert response.json()["report"]["embedding_model_match"] is False

    response = client.post(path, {"scope": "full"}, format="json")
    body = b"".join(response.streaming_content)
    if path.endswith("stream"):
        lines = [orjson.loads(line) for line in body.splitlines()]
        records = [line["record"] for line in lines if line["kind"] == "chunks"]
        manifest = lines[0]["manifest"]
    else:
        bundle = orjson.loads(body)
        records, manifest = bundle["chunks"], bundle["manifest"]
    chunks = {c["content"]: c for c in records}
    assert (manifest["embedding_model"], manifest["embedding_dim"]) == ("ours", 3)
    assert chunks["ours"]["embedding"] == embedding([1, 0, 0])
    assert chunks["theirs"]["embedding"] == embedding([0, 1, 0])
    assert chunks["theirs"]["embedding_model"] == "theirs"


def test_it_round_trips_a_foreign_embedding_only_with_the_opt_in(team, other_team, token_client):
    source = token_client(team, [Scope.BUNDLES_IMPORT, Scope.BUNDLES_EXPORT])
    target = token_client(other_team, [Scope.BUNDLES_IMPORT])
    source.post(
        "/v1/brain/import",
        make_bundle(chunks=[chunk(1, "ours", embedding=embedding([1, 0, 0]))], model="ours"),
        format="json",
    )
    source.post(
        "/v1/brain/import?accept_foreign_embeddings=true",
        make_bundle(chunks=[chunk(2, "theirs", embedding=embedding([0, 1, 0]))], model="theirs"),
        format="json",
    )
    bundle = export(source)
    refused = target.post("/v1/brain/import", bundle, format="json").json()["report"]
    assert any("dropped 1 embeddings" in w for w in refused["warnings"])
