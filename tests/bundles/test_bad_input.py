"""Bundle input that used to answer 500: each is now a per-record warning or a 4xx, and every
failed import leaves a `bundle.import_failed` audit event."""

from __future__ import annotations

import json

import pytest

from bundles.models import Agent, Chunk, Entity, L2Session, MemoryEdge, MoodState
from memoryadmin.models import AuditEvent, Scope
from tests.bundles.helpers import chunk, make_bundle

IMPORT = "/v1/brain/import"
MAX = 2**63 - 1


@pytest.fixture
def client(team, token_client):  # type: ignore[no-untyped-def]
    return token_client(team, [Scope.BUNDLES_IMPORT, Scope.BUNDLES_EXPORT])


def _post(client, bundle):  # type: ignore[no-untyped-def]
    return client.generic("POST", IMPORT, json.dumps(bundle), content_type="application/json")


BAD_TEXT = {"nul": "a\u0000b", "surrogate": "a\ud800b"}
# (section, record) pairs: each record holds the bad text somewhere a database would choke.
RECORDS = {
    "chunk.tags": ("chunks", lambda t: chunk(9, "tagged", tags=["ok", t])),
    "chunk.metadata-value": ("chunks", lambda t: chunk(9, "meta", metadata={"a": {"b": [t]}})),
    "chunk.metadata-key": ("chunks", lambda t: chunk(9, "meta", metadata={"a": {t: 1}})),
    "chunk.content": ("chunks", lambda t: {**chunk(9, "x"), "content": t}),
    "chunk.content_hash": ("chunks", lambda t: chunk(9, "hashed", content_hash=t)),
    "chunk.embedding_model": ("chunks", lambda t: chunk(9, "model", embedding_model=t)),
    "edge.edge_type": ("memory_edges", lambda t: {"chunk_a": 1, "chunk_b": 2, "edge_type": t}),
    "entity.name": ("entities", lambda t: {"name": t}),
    "session.value": ("l2_sessions", lambda t: {"id": 1, "summary": t}),
    "session.key": ("l2_sessions", lambda t: {"id": 1, t: "x"}),
    "mood.key": ("mood_states", lambda t: {"key": t, "valence": 0.1}),
    "mood.nested": ("mood_states", lambda t: {"key": "k", "extra": {"deep": t}}),
    "agent.name": ("agents", lambda t: {"name": t}),
    "agent.persona": ("agents", lambda t: {"name": "coder", "persona": t}),
}
TABLES = {
    "chunks": Chunk,
    "memory_edges": MemoryEdge,
    "entities": Entity,
    "l2_sessions": L2Session,
    "mood_states": MoodState,
    "agents": Agent,
}


@pytest.mark.parametrize("text", sorted(BAD_TEXT))
@pytest.mark.parametrize("case", sorted(RECORDS))
def test_it_skips_a_record_holding_text_a_database_cannot_store(client, team, case, text):
    section, make = RECORDS[case]
    good = [chunk(1, "first"), chunk(2, "second")]
    sections = {"chunks": good}
    record = make(BAD_TEXT[text])
    sections[section] = [*sections.get(section, []), record]
    response = _post(client, make_bundle(**sections))
    assert response.status_code == 200, response.content[:300]
    report = response.json()["report"]
    assert any(("NUL" in w or "surrogate" in w) for w in report["warnings"]), report["warnings"]
    assert TABLES[section].objects.filter(team=team).count() == (2 if section == "chunks" else 0)


@pytest.mark.parametrize("text", sorted(BAD_TEXT))
@pytest.mark.parametrize("where", ["checksum", "tenant_name", "generator", "extra-key"])
def test_it_refuses_an_envelope_holding_text_a_database_cannot_store(client, team, where, text):
    bundle = make_bundle(chunks=[chunk(1, "first")])
    bad = BAD_TEXT[text]
    if where == "generator":
        bundle["generator"] = bad
    elif where == "extra-key":
        bundle["manifest"][f"x{bad}"] = 1
    else:
        bundle["manifest"][where] = bad
    response = _post(client, bundle)
    assert response.status_code == 422, response.content[:300]
    assert response.json()["error"]["code"] in ("field-nul", "field-surrogate")
    assert not Chunk.objects.filter(team=team).exists()
    assert AuditEvent.objects.filter(team=team, action="bundle.import_failed").exists()


def _edges(count: int) -> dict:
    return make_bundle(
        chunks=[chunk(1, "a"), chunk(2, "b")],
        edges=[{"chunk_a": 1, "chunk_b": 2, "edge_type": "causal", "co_activation_count": count}],
        entities=[{"name": "Zürich", "frequency": count}],
    )


def test_it_saturates_counters_across_imports_and_warns(client, team):
    assert _post(client, _edges(MAX - 5)).status_code == 200
    response = _post(client, _edges(10))
    assert response.status_code == 200, response.content[:300]
    warnings = response.json()["report"]["warnings"]
    assert any("largest co_activation_count" in w for w in warnings), warnings
    assert any("largest frequency" in w for w in warnings), warnings
    assert MemoryEdge.objects.get(team=team).co_activation_count == MAX
    assert Entity.objects.get(team=team).frequency == MAX
    exported = client.post("/v1/brain/export", {"scope": "full"}, format="json")
    assert exported.status_code == 200


def test_it_saturates_counters_within_one_bundle_and_warns(client, team):
    bundle = _edges(MAX)
    bundle["memory_edges"] *= 2
    bundle["entities"] *= 2
    bundle["manifest"].pop("checksum")
    response = _post(client, bundle)
    assert response.status_code == 200, response.content[:300]
    assert any("largest co_activation_count" in w for w in response.json()["report"]["warnings"])
    assert MemoryEdge.objects.get(team=team).co_activation_count == MAX
    assert Entity.objects.get(team=team).frequency == MAX


@pytest.mark.parametrize(
    ("body", "content_type", "code"),
    [
        (b'{"format": ', "application/json", "malformed-json"),
        (b"{}", "text/plain", "unsupported-media-type"),
        (
            b'{"format": "memoryai-bundle", "version": 2, "manifest": {}}',
            None,
            "version-unsupported",
        ),
        (b"[]", None, "not-object"),
    ],
    ids=["malformed-json", "media-type", "version", "not-object"],
)
def test_it_audits_every_failed_import(client, team, body, content_type, code):
    response = client.generic("POST", IMPORT, body, content_type=content_type or "application/json")
    assert 400 <= response.status_code < 500
    assert response.json()["error"]["code"] == code
    failed = AuditEvent.objects.get(team=team, action="bundle.import_failed")
    assert failed.data["code"] == code


def test_it_audits_a_failed_import_of_the_brain_page_upload(client, team, admin_user):
    import io

    client.force_login(admin_user)
    upload = io.BytesIO(b"{nope")
    upload.name = "b.json"
    response = client.post(f"/t/{team.slug}/brain/import/", {"file": upload})
    assert response.status_code == 302
    failed = AuditEvent.objects.get(team=team, action="bundle.import_failed")
    assert failed.data["code"] == "malformed-json"
