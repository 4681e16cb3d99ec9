"""Mirror-only chunks withdrawn longer than the retention period are deleted; nothing else is."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from bundles.imports import bundle_import
from bundles.models import Chunk, ChunkOrigin, MemoryEdge
from bundles.services.chunks import chunk_delete
from bundles.services.prune import brain_prune_withdrawn
from bundles.tasks import prune_withdrawn_chunks
from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from reviews.services.repositories import repository_sync
from sources.models import Source
from sources.services.lifecycle import source_add, source_approve, source_disable
from sources.services.refresh import source_refresh
from tests.brain.conftest import exported
from tests.bundles.helpers import chunk, make_bundle
from tests.reviews.conftest import M
from tests.sources.helpers import record_text, write_source

SYSTEM = Actor.system()
MONTH = timedelta(days=30)


def text(title: str) -> str:
    return f"{title}\n\nSome body text."


def approved(team, root, records: dict[str, str]) -> Source:  # type: ignore[no-untyped-def]
    write_source(root, records)
    source = source_add(actor=SYSTEM, team=team, location=str(root))
    source.refresh_from_db()  # outside a test transaction its first refresh already ran
    source_approve(actor=SYSTEM, source=source)
    source_refresh(source_id=source.pk)
    source.refresh_from_db()
    return source


def age(team, days: int = 31) -> None:  # type: ignore[no-untyped-def]
    """Pretend every withdrawal happened `days` ago."""
    Chunk.objects.filter(team=team, withdrawn_at__isnull=False).update(
        withdrawn_at=timezone.now() - timedelta(days=days)
    )


def contents(team) -> set[str]:  # type: ignore[no-untyped-def]
    return set(Chunk.objects.filter(team=team).values_list("content", flat=True))


def test_it_deletes_withdrawn_mirror_chunks_once_the_retention_period_is_over(
    team, tmp_path, token_client
):
    source = approved(
        team,
        tmp_path,
        {
            "a": record_text("a", title="Deploys go out on Tuesdays"),
            "pref": record_text("pref", title="Short answers", kind="preference"),
        },
    )
    ids = set(Chunk.objects.filter(team=team).values_list("pk", flat=True))
    assert not Chunk.objects.filter(team=team, withdrawn_at__isnull=False).exists()
    source_disable(actor=SYSTEM, source=source)
    withdrawn = Chunk.objects.filter(team=team, withdrawn_at__isnull=False)
    assert withdrawn.count() == 2  # the mirror noted when
    # Within the retention period nothing goes, and nothing is recorded.
    (young,) = brain_prune_withdrawn(team=team, older_than=MONTH)
    assert (young.deleted, young.stamped) == (0, 0)
    assert not AuditEvent.objects.filter(action="brain.prune").exists()
    age(team)
    (result,) = brain_prune_withdrawn(team=team, older_than=MONTH)
    assert (result.deleted, result.dna, result.origins_deleted) == (2, 1, 2)
    assert not Chunk.objects.filter(team=team).exists()
    assert not ChunkOrigin.objects.filter(team=team).exists()
    event = AuditEvent.objects.get(action="brain.prune")
    assert event.team == team and event.actor_label == SYSTEM.label
    assert event.data["deleted"] == 2 and event.data["dna"] == 1
    assert event.data["retention_days"] == 30 and event.data["origins_deleted"] == 2
    assert event.data["chunks"]["count"] == 2
    assert {n for low, high in event.data["chunks"]["ranges"] for n in range(low, high + 1)} == ids
    # Approved again, the records come back as new chunks and are served.
    source_approve(actor=SYSTEM, source=source)
    assert set(exported(token_client(team, ["bundles:export"]))) == {
        text("Deploys go out on Tuesdays"),
        text("Short answers"),
    }
    # Running again finds nothing to do and records nothing.
    assert brain_prune_withdrawn(team=team, older_than=MONTH)[0].deleted == 0
    assert AuditEvent.objects.filter(action="brain.prune").count() == 1


def test_it_keeps_what_an_import_a_user_an_edge_or_another_origin_still_holds(
    team, other_team, tmp_path, token_client
):
    titles = ["Imported too", "Also elsewhere", "Deleted by a user", "Linked", "Plain"]
    source = approved(
        team,
        tmp_path / "one",
        {f"r{n}": record_text(f"r{n}", title=title) for n, title in enumerate(titles)},
    )
    approved(team, tmp_path / "two", {"x": record_text("x", title="Also elsewhere")})
    bundle_import(
        team=team,
        actor=SYSTEM,
        bundle=make_bundle(chunks=[chunk(1, text("Imported too")), chunk(2, "An imported fact")]),
    )
    by_content = {c.content: c for c in Chunk.objects.filter(team=team)}
    assert by_content[text("Imported too")].standalone  # the import made it its own
    chunk_delete(chunk=by_content[text("Deleted by a user")], actor=SYSTEM, automatic=False)
    # An edge on a mirror-only chunk (imports link the chunks of their own bundle, which they
    # make standalone; this one stands for any edge a future path might add).
    MemoryEdge.objects.create(
        team=team,
        source=by_content["An imported fact"],
        target=by_content[text("Linked")],
        edge_type="relates_to",
    )
    # Another team's withdrawn chunk is not this prune's business.
    other = approved(other_team, tmp_path / "other", {"o": record_text("o", title="Plain")})
    source_disable(actor=SYSTEM, source=other)
    source_disable(actor=SYSTEM, source=source)
    age(team, days=400)
    age(other_team, days=400)

    (result,) = brain_prune_withdrawn(team=team, older_than=MONTH)
    assert (result.deleted, result.kept_for_edges) == (1, 1)
    left = contents(team)
    assert text("Plain") not in left
    assert {text(t) for t in titles[:4]} <= left
    assert set(exported(token_client(team, ["bundles:export"]))) == {
        text("Imported too"),
        text("Also elsewhere"),
        "An imported fact",
    }
    assert MemoryEdge.objects.filter(team=team).count() == 1
    assert contents(other_team) == {text("Plain")}
    assert "kept 1 that edges still use" in AuditEvent.objects.get(action="brain.prune").summary


def test_it_gives_an_old_text_its_full_retention_and_finds_it_again_on_revert(team, tmp_path):
    source = approved(team, tmp_path, {"a": record_text("a", title="Deploys go out on Tuesdays")})
    old = Chunk.objects.get(team=team)
    write_source(
        tmp_path,
        {
            "a": record_text(
                "a", title="Deploys go out on Wednesdays", updated="2026-01-03T00:00:00Z"
            )
        },
    )
    source_refresh(source_id=source.pk)
    old.refresh_from_db()
    assert old.withdrawn_at is not None  # its origin moved to the new text
    assert brain_prune_withdrawn(team=team, older_than=MONTH)[0].deleted == 0
    write_source(
        tmp_path,
        {"a": record_text("a", title="Deploys go out on Tuesdays", updated="2026-01-04T00:00:00Z")},
    )
    source_refresh(source_id=source.pk)
    old.refresh_from_db()
    assert old.withdrawn_at is None  # served again: the same chunk, found by its hash
    assert ChunkOrigin.objects.get(team=team).chunk_id == old.pk
    newer = Chunk.objects.get(team=team, content=text("Deploys go out on Wednesdays"))
    assert newer.withdrawn_at is not None
    age(team)
    (result,) = brain_prune_withdrawn(team=team, older_than=MONTH)
    assert result.deleted == 1 and result.chunk_ids == [newer.pk]
    assert contents(team) == {text("Deploys go out on Tuesdays")}


def test_it_prunes_repository_memories_withdrawn_upstream(
    repository, remote, team, client, admin_user
):
    constraint = Chunk.objects.get(team=team, content__startswith="Keep SQL explicit")
    assert constraint.is_dna and not constraint.standalone
    remote.commit({f"{M}/20260102-no-orm-magic.md": None}, "Drop the constraint")
    repository_sync(repository_id=repository.pk)
    constraint.refresh_from_db()
    assert constraint.withdrawn_at is not None
    client.force_login(admin_user)
    page = client.get(reverse("brain", args=[team.slug])).content.decode()
    assert "1 withdrawn (approval gone, not served; deleted 30 days after)" in page
    assert f'since <time datetime="{constraint.withdrawn_at.isoformat()}"' in page
    age(team)
    (result,) = brain_prune_withdrawn(team=team, older_than=MONTH)
    assert (result.deleted, result.dna) == (1, 1)
    assert not Chunk.objects.filter(pk=constraint.pk).exists()
    page = client.get(reverse("brain", args=[team.slug])).content.decode()
    assert "0 withdrawn" in page


def test_it_starts_the_clock_for_withdrawn_chunks_it_finds_without_a_time(team):
    """Chunks withdrawn before withdrawal times were kept (or by any path that did not note
    one) count from the first prune that sees them."""
    legacy = Chunk.objects.create(
        team=team, content="Old mirror text", content_hash="0" * 64, memory_type="fact",
        standalone=False, origin="source",
    )  # fmt: skip
    (first,) = brain_prune_withdrawn(team=team, older_than=timedelta(0))
    assert (first.stamped, first.deleted) == (1, 0)
    legacy.refresh_from_db()
    assert legacy.withdrawn_at is not None
    assert "had no withdrawal time" in AuditEvent.objects.get(action="brain.prune").summary
    (second,) = brain_prune_withdrawn(team=team, older_than=timedelta(0))
    assert (second.stamped, second.deleted) == (0, 1)


def test_it_runs_daily_from_beat_with_the_configured_retention(team, tmp_path, settings):
    entry = settings.CELERY_BEAT_SCHEDULE["bundles-prune-withdrawn"]
    assert entry["task"] == prune_withdrawn_chunks.name
    assert entry["schedule"].hour == {3} and entry["schedule"].minute == {40}
    source = approved(team, tmp_path, {"a": record_text("a", title="Deploys go out on Tuesdays")})
    source_disable(actor=SYSTEM, source=source)
    age(team, days=10)
    settings.BRAIN_WITHDRAWN_RETENTION_DAYS = 30
    prune_withdrawn_chunks.delay()
    assert Chunk.objects.filter(team=team).count() == 1
    settings.BRAIN_WITHDRAWN_RETENTION_DAYS = 7
    prune_withdrawn_chunks.delay()
    assert not Chunk.objects.filter(team=team).exists()


def test_it_defaults_to_thirty_days():
    assert settings.BRAIN_WITHDRAWN_RETENTION_DAYS == 30


@pytest.mark.django_db(transaction=True)
def test_it_never_deletes_a_chunk_a_concurrent_mirror_brings_back(team, tmp_path):
    """PostgreSQL, two connections: an origin re-activated while the prune runs keeps its
    chunk. The prune's delete of inactive origins waits for the row, sees it active, skips it;
    the chunk's delete is refused by the foreign key at commit, and the team's prune rolls
    back (logged, left for the next run)."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer at a time: the prune and a mirror cannot overlap")
    source = approved(team, tmp_path, {"a": record_text("a", title="Deploys go out on Tuesdays")})
    source_disable(actor=SYSTEM, source=source)
    age(team)
    origin = ChunkOrigin.objects.get(team=team)
    updated, release = threading.Event(), threading.Event()

    def mirror_brings_it_back() -> None:
        try:
            with transaction.atomic():
                ChunkOrigin.objects.filter(pk=origin.pk).update(active=True)
                updated.set()
                release.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=mirror_brings_it_back)
    thread.start()
    assert updated.wait(10)
    threading.Timer(1.0, release.set).start()  # commit while the prune waits for the row
    (result,) = brain_prune_withdrawn(team=team, older_than=MONTH)
    thread.join(10)
    assert result.deleted == 0 and "foreign key" in result.error.lower(), result
    assert Chunk.objects.filter(pk=origin.chunk_id).exists()
    assert ChunkOrigin.objects.get(pk=origin.pk).active
    assert not AuditEvent.objects.filter(action="brain.prune").exists()
