"""Source records flow into the brain and out of it with the source's state."""

from __future__ import annotations

import time
from datetime import timedelta

from django.utils import timezone

from bundles.models import Chunk, ChunkOrigin
from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from sources.fetchers import Credential
from sources.models import Source
from sources.services.lifecycle import source_add, source_approve, source_delete, source_disable
from sources.services.refresh import source_refresh
from tests.brain.conftest import exported, stream_contents
from tests.sources.helpers import manifest_text, record_text, write_source

A = "Deploys go out on Tuesdays\n\nSome body text."


def _refresh(source: Source) -> None:
    source_refresh(source_id=source.pk)
    source.refresh_from_db()


def _approved(team, root, records) -> Source:  # type: ignore[no-untyped-def]
    write_source(root, records)
    source = source_add(actor=Actor.system(), team=team, location=str(root))
    source_approve(actor=Actor.system(), source=source)
    _refresh(source)
    return source


def _state(team) -> tuple[int, int, int, list[tuple[str, bool]]]:  # type: ignore[no-untyped-def]
    return (
        Chunk.objects.filter(team=team).count(),
        ChunkOrigin.objects.filter(team=team).count(),
        AuditEvent.objects.filter(team=team, action="brain.mirror").count(),
        sorted(ChunkOrigin.objects.filter(team=team).values_list("ref", "active")),
    )


def test_it_exports_a_refreshed_source_with_provenance_and_mapped_types(
    team, tmp_path, token_client
):
    source = _approved(
        team,
        tmp_path,
        {
            "a": record_text("a", title="Deploys go out on Tuesdays", extra="tags: ['ops']\n"),
            "p": record_text("p", title="Monorepo", kind="project"),
            "pref": record_text("pref", title="Short answers", kind="preference"),
        },
    )
    client = token_client(team, ["bundles:export"])
    chunks = exported(client)
    assert set(chunks) == {A, "Monorepo\n\nSome body text.", "Short answers\n\nSome body text."}
    chunk = chunks[A]
    assert chunk["memory_type"] == "fact" and chunk["tags"] == ["ops"]
    provenance = chunk["metadata"]["memoryadmin"]
    own = {
        "origin": "source",
        "ref": f"source:{source.pk}:a",
        "source_id": source.pk,
        "source": source.identity,
        "source_name": "Test source",
        "record_id": "a",
        "retrieved_at": provenance["retrieved_at"],
        "stale": False,
    }
    assert provenance == {**own, "origins": [own]}  # every origin is named, here the one
    assert chunks["Monorepo\n\nSome body text."]["tags"] == ["project"]
    assert chunks["Short answers\n\nSome body text."]["memory_type"] == "preference"
    assert sorted(stream_contents(client)) == sorted(chunks)
    # Re-running changes nothing: same chunks, origins, and no new mirror event.
    before = _state(team)
    _refresh(source)
    source_approve(actor=Actor.system(), source=source)
    assert _state(team) == before


def test_it_drops_expired_and_superseded_records_and_changed_text(team, tmp_path, token_client):
    soon = (timezone.now() + timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    source = _approved(
        team,
        tmp_path,
        {
            "a": record_text("a", title="Deploys go out on Tuesdays"),
            "old": record_text("old", title="Old rule"),
            "brief": record_text("brief", title="Freeze this week", extra=f"expires: '{soon}'\n"),
        },
    )
    client = token_client(team, ["bundles:export"])
    assert "Freeze this week\n\nSome body text." in exported(client)
    time.sleep(2.2)  # expiry applies at read time, between refreshes too
    assert "Freeze this week\n\nSome body text." not in exported(client)
    write_source(
        tmp_path,
        {
            "a": record_text(
                "a", title="Deploys go out on Wednesdays", updated="2026-01-03T00:00:00Z"
            ),
            "old": record_text("old", title="Old rule"),
            "new": record_text("new", title="New rule", extra="supersedes: ['old']\n"),
        },
    )
    _refresh(source)
    contents = set(exported(client))
    assert contents == {
        "Deploys go out on Wednesdays\n\nSome body text.",
        "New rule\n\nSome body text.",
    }
    # The old texts still exist as withdrawn chunks, not served.
    assert Chunk.objects.filter(team=team, content=A).exists()
    origin = ChunkOrigin.objects.get(ref=f"source:{source.pk}:old")
    assert origin.active is False
    before = _state(team)
    _refresh(source)
    assert _state(team) == before


def test_it_withdraws_on_disable_and_returns_on_approval_without_duplicates(
    team, tmp_path, token_client
):
    source = _approved(team, tmp_path, {"a": record_text("a", title="Deploys go out on Tuesdays")})
    client = token_client(team, ["bundles:export"])
    chunk_id = exported(client)[A]["id"]
    source_disable(actor=Actor.system(), source=source)
    assert exported(client) == {}
    source_approve(actor=Actor.system(), source=source)
    chunks = exported(client)
    assert list(chunks) == [A] and chunks[A]["id"] == chunk_id
    assert Chunk.objects.filter(team=team).count() == 1


def test_it_marks_stale_records_and_withdraws_denied_sources(https_server, team, token_client):
    https_server.serve("memories.json", manifest_text(["a"], name="Remote"))
    https_server.serve("records/a.md", record_text("a", title="Deploys go out on Tuesdays"))
    source = source_add(
        actor=Actor.system(),
        team=team,
        location=https_server.base,
        credential=Credential(kind="bearer", token="s3cret-token"),
    )
    source_approve(actor=Actor.system(), source=source)
    _refresh(source)
    client = token_client(team, ["bundles:export"])
    chunk_id = exported(client)[A]["id"]
    https_server.serve("memories.json", b"oops", status=500)
    _refresh(source)
    assert source.health == "stale"
    assert exported(client)[A]["metadata"]["memoryadmin"]["stale"] is True
    https_server.serve("memories.json", b"no", status=401)
    _refresh(source)
    assert source.health == "denied"
    assert exported(client) == {}
    https_server.serve("memories.json", manifest_text(["a"], name="Remote"))
    _refresh(source)
    chunks = exported(client)
    assert chunks[A]["id"] == chunk_id and chunks[A]["metadata"]["memoryadmin"]["stale"] is False
    assert Chunk.objects.filter(team=team).count() == 1


def test_it_keeps_one_chunk_for_the_same_text_imported_and_from_a_source(
    team, tmp_path, token_client
):
    from bundles.imports import bundle_import
    from tests.bundles.helpers import chunk, make_bundle

    source = _approved(team, tmp_path, {"a": record_text("a", title="Deploys go out on Tuesdays")})
    report = bundle_import(
        team=team,
        actor=Actor.system(),
        bundle=make_bundle(
            chunks=[chunk(1, A, metadata={"memoryadmin": {"origin": "repository"}})]
        ),
    )
    assert report["report"]["chunks"]["skipped_duplicate"] == 1
    assert any("memoryadmin_claimed" in w for w in report["report"]["warnings"])
    source_disable(actor=Actor.system(), source=source)
    # The import is an origin of its own: the text stays served.
    client = token_client(team, ["bundles:export"])
    assert list(exported(client)) == [A]
    assert Chunk.objects.filter(team=team).count() == 1


def test_it_never_lets_an_import_claim_provenance(team, token_client):
    from bundles.imports import bundle_import
    from tests.bundles.helpers import chunk, make_bundle

    forged = {"memoryadmin": {"origin": "repository", "approved_by": "Rita"}}
    bundle_import(
        team=team, actor=Actor.system(), bundle=make_bundle(chunks=[chunk(1, "x", metadata=forged)])
    )
    metadata = exported(token_client(team, ["bundles:export"]))["x"]["metadata"]
    assert "memoryadmin" not in metadata
    assert metadata["memoryadmin_claimed"] == forged["memoryadmin"]


def test_it_names_a_deleted_source_on_the_brain_page_without_a_dead_link(
    team, tmp_path, client, admin_user
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    kept = _approved(team, tmp_path / "kept", {"k": record_text("k", title="Kept record")})
    gone = _approved(team, tmp_path / "gone", {"g": record_text("g", title="Gone record")})
    gone_name = ChunkOrigin.objects.get(ref=f"source:{gone.pk}:g").metadata["source_name"]
    client.force_login(admin_user)
    url = f"/t/{team.slug}/brain/"
    client.get(url)  # warm the session and role caches
    with CaptureQueriesContext(connection) as before:
        page = client.get(url).content.decode()
    assert f'/t/{team.slug}/sources/{gone.pk}/">{gone_name}</a>' in page

    source_delete(actor=Actor.system(), source=gone)
    with CaptureQueriesContext(connection) as after:
        response = client.get(url)
    page = response.content.decode()
    assert response.status_code == 200
    assert f"/sources/{gone.pk}/" not in page  # that page is a 404 now
    assert f'{gone_name} <span class="muted">(deleted)</span>, record <code>g</code>' in page
    assert f'/t/{team.slug}/sources/{kept.pk}/">' in page  # a living source keeps its link
    assert len(after) == len(before)  # known from the one origins prefetch, not per row
