"""Exports: scopes, deleted chunks, the NDJSON stream against the JSON bundle."""

from __future__ import annotations

import json
from datetime import timedelta

import orjson
import pytest
from django.utils import timezone

from bundles.imports import bundle_import
from bundles.models import Chunk
from bundles.services.chunks import chunk_delete, chunk_upsert
from formats import memoryai as protocol
from memoryadmin.audit import Actor
from tests.bundles.helpers import response_json, sample_bundle

BOTH = ["bundles:import", "bundles:export"]


@pytest.fixture
def client(team, token_client):
    bundle_import(team=team, actor=Actor.system(), bundle=sample_bundle())
    return token_client(team, BOTH)


def export(client, body, path="/v1/brain/export"):
    return client.generic("POST", path, orjson.dumps(body), content_type="application/json")


def parse_stream(response) -> tuple[dict, list[dict], dict]:
    assert response["Content-Type"] == "application/x-ndjson"
    lines = [orjson.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    return lines[0], lines[1:-1], lines[-1]


def test_it_exports_accurate_counts_and_a_valid_checksum(client):
    bundle = response_json(export(client, {"scope": "full"}))
    assert protocol.verify_checksum(bundle).ok
    for section in protocol.SECTIONS:
        assert bundle["manifest"]["counts"][section] == len(bundle[section])
    assert bundle["manifest"]["counts"]["chunks"] == 6
    protocol.validate_envelope(bundle)
    assert protocol.validate_bundle(bundle).errors == []


def test_it_exports_only_dna_for_dna_only(client):
    bundle = response_json(export(client, {"scope": "dna_only"}))
    assert {c["content"] for c in bundle["chunks"]} == {
        "Prefers tabs over spaces",
        "Never force-push to main",
        "Met the café team in Zürich 🎉",
        "Pinned reminder",
    }
    assert [e["name"] for e in bundle["entities"]] == ["Alice"]
    assert bundle["memory_edges"] == []  # each sample edge touches a non-DNA chunk
    assert protocol.verify_checksum(bundle).ok


def test_it_exports_what_changed_since(client, team):
    later = timezone.now() + timedelta(seconds=1)
    Chunk.objects.filter(team=team).update(updated_at=timezone.now() - timedelta(days=1))
    chunk_upsert(team=team, actor=Actor.system(), content="brand new", memory_type="fact")
    bundle = response_json(
        export(client, {"scope": "since", "since": (later - timedelta(minutes=5)).isoformat()})
    )
    assert [c["content"] for c in bundle["chunks"]] == ["brand new"]
    assert bundle["manifest"]["scope"] == "since" and bundle["manifest"]["since"]
    response = export(client, {"scope": "since"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "since-missing"


def test_it_never_exports_deleted_chunks(client, team):
    gone = Chunk.objects.get(team=team, content="Deploys happen on Tuesdays")
    chunk_delete(chunk=gone, actor=Actor.system(), automatic=False)
    bundle = response_json(export(client, {}))
    assert "Deploys happen on Tuesdays" not in {c["content"] for c in bundle["chunks"]}
    assert bundle["memory_edges"] == []  # both sample edges touch the deleted chunk
    _, records, _ = parse_stream(export(client, {}, "/v1/brain/export/stream"))
    assert all(r["record"].get("content") != "Deploys happen on Tuesdays" for r in records)


def test_it_streams_the_same_bundle_line_by_line(client):
    whole = response_json(export(client, {"scope": "full"}))
    header, records, trailer = parse_stream(
        export(client, {"scope": "full"}, "/v1/brain/export/stream")
    )
    assert header["kind"] == "header" and trailer["kind"] == "trailer"
    rebuilt = {k: v for k, v in header.items() if k != "kind"}
    for name in protocol.SECTIONS:
        rebuilt[name] = [r["record"] for r in records if r["kind"] == name]
    assert trailer["counts_match"] is True
    assert trailer["counts"] == header["manifest"]["counts"] == whole["manifest"]["counts"]
    rebuilt["manifest"]["checksum"] = trailer["checksum"]
    assert protocol.verify_checksum(rebuilt).ok
    # Same data, so with the same exported_at the two checksums are equal.
    rebuilt["exported_at"] = whole["exported_at"]
    assert protocol.bundle_checksum(rebuilt) == whole["manifest"]["checksum"]
    for name in protocol.SECTIONS:
        assert rebuilt[name] == whole[name]


def test_it_keeps_the_stream_order_header_sections_trailer(client):
    _, records, _ = parse_stream(export(client, {}, "/v1/brain/export/stream"))
    kinds = [r["kind"] for r in records]
    assert kinds == sorted(kinds, key=protocol.SECTIONS.index)


def test_it_streams_the_json_bundle_with_the_manifest_last(client, team):
    metadata = {"tiny": 1e-5, "big": 2**70}
    Chunk.objects.filter(team=team).update(decay_score=1.5e-7, metadata=metadata)
    response = export(client, {"scope": "full"})
    assert response.streaming and response["Cache-Control"] == "no-store"
    bundle = json.loads(b"".join(response.streaming_content))  # orjson stops at 64-bit ints
    assert list(bundle)[-1] == "manifest"
    assert list(bundle)[:4] == ["format", "version", "generator", "exported_at"]
    assert protocol.verify_checksum(bundle).ok
    assert {c["decay_score"] for c in bundle["chunks"]} == {1.5e-7}
    assert bundle["chunks"][0]["metadata"] == {"tiny": 1e-5, "big": 2**70}
    for section in protocol.SECTIONS:
        assert bundle["manifest"]["counts"][section] == len(bundle[section])


@pytest.mark.django_db(transaction=True)
def test_it_reads_counts_and_rows_in_one_snapshot_outside_a_transaction(team, token_client):
    """Outside a test transaction: REPEATABLE READ on PostgreSQL, a read transaction on SQLite."""
    bundle_import(team=team, actor=Actor.system(), bundle=sample_bundle())
    client = token_client(team, BOTH)
    bundle = response_json(export(client, {"scope": "full"}))
    assert protocol.verify_checksum(bundle).ok and bundle["manifest"]["counts"]["chunks"] == 6
    _, records, trailer = parse_stream(export(client, {}, "/v1/brain/export/stream"))
    assert trailer["counts_match"] and len(records) == sum(trailer["counts"].values())
    chunk_upsert(team=team, actor=Actor.system(), content="after", memory_type="fact")
    assert response_json(export(client, {}))["manifest"]["counts"]["chunks"] == 7


def test_it_logs_the_exported_chunk_ids_and_counts_before_the_first_byte(client, team):
    from bundles.readlog import id_summary
    from memoryadmin.models import AuditEvent

    gone = Chunk.objects.get(team=team, content="Deploys happen on Tuesdays")
    chunk_delete(chunk=gone, actor=Actor.system(), automatic=False)
    response = export(client, {"scope": "full"})
    event = AuditEvent.objects.filter(team=team, action="bundle.export").latest("id")
    bundle = json.loads(b"".join(response.streaming_content))
    assert event.data["counts"] == bundle["manifest"]["counts"]
    assert event.data["counts"]["chunks"] == 5
    assert event.data["chunks"] == id_summary(c["id"] for c in bundle["chunks"])


@pytest.mark.django_db(transaction=True)
def test_it_reads_the_export_without_jit_and_leaves_the_setting_to_the_transaction(team):
    """PostgreSQL plans the served filter far above jit_above_cost; compiling each scan cost
    more than the scan. The setting is the export transaction's (SET LOCAL), not the
    connection's."""
    from django.db import connection

    from bundles.services.exports import ExportRequest, bundle_export_json

    if connection.vendor != "postgresql":
        pytest.skip("JIT is PostgreSQL's")
    bundle_import(team=team, actor=Actor.system(), bundle=sample_bundle())

    def jit() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SHOW jit")
            return cursor.fetchone()[0]

    before = jit()
    parts = bundle_export_json(team=team, actor=Actor.system(), request=ExportRequest())
    assert jit() == before  # the audit's transaction has ended
    first = next(parts)  # inside the snapshot now
    assert jit() == "off"
    body = first + b"".join(parts)
    assert jit() == before and protocol.verify_checksum(json.loads(body)).ok
