"""DNA chunks survive every automatic path: decay, expiry, automatic delete, re-import."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from bundles.imports import bundle_import
from bundles.models import Chunk, Origin
from bundles.services.chunks import (
    DnaProtectedError,
    chunk_decay,
    chunk_delete,
    chunk_upsert,
    chunks_expire,
)
from memoryadmin.audit import Actor
from tests.bundles.helpers import chunk, make_bundle

SYSTEM = Actor.system()
PAST = (timezone.now() - timedelta(days=30)).isoformat()


@pytest.fixture
def brain(team):
    bundle = make_bundle(
        chunks=[
            chunk(1, "pref", "preference", valid_until=PAST),
            chunk(2, "decision", "decision", valid_until=PAST),
            chunk(3, "who", "identity", valid_until=PAST),
            chunk(4, "trap", "pitfall", valid_until=PAST),
            chunk(5, "how", "procedure", valid_until=PAST),
            chunk(6, "critical fact", "fact", zone="critical", valid_until=PAST),
            chunk(7, "important fact", "fact", zone="important", valid_until=PAST),
            chunk(8, "pinned fact", "fact", is_pinned=True, valid_until=PAST),
            chunk(9, "plain fact", "fact", valid_until=PAST),
            chunk(10, "plain episode", "episodic", valid_until=PAST),
        ]
    )
    bundle_import(team=team, actor=SYSTEM, bundle=bundle)
    return team


def dna(team):
    return Chunk.objects.filter(team=team, is_dna=True)


def test_it_marks_every_dna_condition(brain):
    assert dna(brain).count() == 8
    assert set(
        Chunk.objects.filter(team=brain, is_dna=False).values_list("content", flat=True)
    ) == {
        "plain fact",
        "plain episode",
    }


def test_it_never_decays_dna(brain):
    assert chunk_decay(team=brain, actor=SYSTEM, factor=0.5) == 2
    assert set(dna(brain).values_list("decay_score", flat=True)) == {1.0}
    assert set(
        Chunk.objects.filter(team=brain, is_dna=False).values_list("decay_score", flat=True)
    ) == {0.5}


def test_it_never_expires_dna(brain):
    assert chunks_expire(team=brain, actor=SYSTEM) == 2
    assert dna(brain).count() == 8
    assert Chunk.objects.filter(team=brain).count() == 8


def test_it_refuses_to_delete_dna_automatically(brain):
    for item in dna(brain):
        with pytest.raises(DnaProtectedError):
            chunk_delete(chunk=item, actor=SYSTEM, automatic=True)
    assert dna(brain).count() == 8
    plain = Chunk.objects.get(team=brain, content="plain fact")
    chunk_delete(chunk=plain, actor=SYSTEM, automatic=True)
    assert not Chunk.objects.filter(pk=plain.pk).exists()


def test_it_protects_dna_even_if_a_row_lost_its_flag(brain):
    item = Chunk.objects.get(team=brain, content="pref")
    Chunk.objects.filter(pk=item.pk).update(is_dna=False)  # a corrupted flag
    item.refresh_from_db()
    with pytest.raises(DnaProtectedError):
        chunk_delete(chunk=item, actor=SYSTEM, automatic=True)
    chunk_decay(team=brain, actor=SYSTEM, factor=0.1)
    chunks_expire(team=brain, actor=SYSTEM)
    item.refresh_from_db()
    assert item.decay_score == 1.0


def test_it_keeps_dna_when_a_reimport_or_upsert_says_otherwise(brain):
    bundle_import(team=brain, actor=SYSTEM, bundle=make_bundle(chunks=[chunk(1, "pref", "fact")]))
    assert Chunk.objects.get(team=brain, content="pref").memory_type == "preference"
    upserted, created = chunk_upsert(
        team=brain, actor=SYSTEM, content="pref", memory_type="fact", origin=Origin.SOURCE
    )
    assert not created and upserted.is_dna
    chunk_decay(team=brain, actor=SYSTEM, factor=0.5)
    upserted.refresh_from_db()
    assert upserted.decay_score == 1.0


def test_it_soft_deletes_for_a_user_even_dna(brain):
    item = Chunk.objects.get(team=brain, content="who")
    chunk_delete(chunk=item, actor=SYSTEM, automatic=False)
    item.refresh_from_db()
    assert item.is_deleted and item.deleted_at is not None
