"""Reviewer hints: on a proposal's page and in the queue, the active memories a proposal is
close to (same repository first), labelled, linked, side by side; and the import report's
near duplicates."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from bundles.embeddings import model as embedding_model
from bundles.embeddings.lifecycle import brain_embed
from bundles.embeddings.similar import (
    DUPLICATE,
    RELATED,
    proposal_hints,
    proposal_vectors_pending,
)
from bundles.imports import bundle_import
from bundles.models import Chunk, ProposalVector
from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from reviews.models import Memory, MemoryStatus
from tests.agents.conftest import add_memories
from tests.bundles.helpers import chunk, embedding, make_bundle
from tests.semantic.conftest import make_chunk

MEMORIES = {
    "20260401-retry-uploads": dict(
        type="gotcha",
        title="Uploads to the storage bucket time out after 30 seconds",
        body="Large uploads must be split into parts of at most 50 MB.\n",
    ),
    "20260402-upload-timeouts": dict(
        type="gotcha",
        title="Uploads to the storage bucket time out after thirty seconds",
        status="proposed",
        body="Split large uploads into parts of at most 50 MB each.\n",
    ),
    "20260403-lunch": dict(
        type="decision",
        title="Team lunch is on Thursdays",
        status="proposed",
        body="We meet at noon in the kitchen.\n",
    ),
}


@pytest.fixture
def proposals(semantic, team, repository, remote, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        add_memories(remote, repository, MEMORIES)
    make_chunk(team, "Object storage uploads can be slow for big files.")
    brain_embed(team_id=team.pk)
    return {m.memory_id: m for m in Memory.objects.filter(repository=repository)}


def test_a_near_copy_of_an_active_memory_is_a_possible_duplicate_from_the_same_repository(
    proposals,
):
    proposal = proposals["20260402-upload-timeouts"]
    hints = proposal_hints([proposal])[proposal.pk]
    assert hints, "expected at least one hint"
    first = hints[0]
    assert first.label == DUPLICATE and first.same_repository
    assert first.origin["memory_id"] == "20260401-retry-uploads"
    assert first.origin["memory_pk"] == proposals["20260401-retry-uploads"].pk
    assert all(h.label in (DUPLICATE, RELATED) for h in hints)
    # The unrelated proposal has nothing close enough to show.
    lunch = proposals["20260403-lunch"]
    assert proposal_hints([lunch]).get(lunch.pk) == []


def test_the_proposal_page_shows_the_hint_with_a_link_and_both_texts(
    proposals, client, reviewer_user, team
):
    proposal = proposals["20260402-upload-timeouts"]
    original = proposals["20260401-retry-uploads"]
    client.force_login(reviewer_user)
    page = client.get(f"/t/{team.slug}/reviews/p/{proposal.pk}/").content.decode()
    assert "Similar active memories" in page and "possible duplicate" in page
    assert f'href="/t/{team.slug}/reviews/p/{original.pk}/"' in page
    assert "time out after 30 seconds" in page  # the active memory's text
    assert "time out after thirty seconds" in page  # beside the proposal's
    assert "nothing here approves or rejects" in page


def test_the_queue_shows_hints_for_the_proposals_of_its_page(
    proposals, client, reviewer_user, team
):
    client.force_login(reviewer_user)
    page = client.get(f"/t/{team.slug}/reviews/").content.decode()
    assert "Similar active memories" in page
    shown = set(re.findall(r'data-proposal="(\d+)"', page))
    assert shown == {str(proposals["20260402-upload-timeouts"].pk)}


def test_the_queue_reads_the_hints_of_a_page_in_queries_that_do_not_grow_with_it(
    proposals, client, reviewer_user, team, repository, remote, django_capture_on_commit_callbacks
):
    """The queue's rows load only what its list shows: the hints read what they need of the
    page's proposals once, not a deferred field per row."""
    client.force_login(reviewer_user)
    url = f"/t/{team.slug}/reviews/"
    client.get(url)  # warm the session and role caches

    def counted() -> tuple[int, str]:
        """The page's queries but the nearest-neighbour searches themselves: pgvector runs one
        per proposal with a vector (store.nearest_many), the exact scan none."""
        with CaptureQueriesContext(connection) as queries:
            page = client.get(url).content.decode()
        return len([q for q in queries if "<=>" not in q["sql"]]), page

    few, page = counted()
    assert "possible duplicate" in page
    more = {
        f"20260410-upload-split-{n}": dict(
            type="gotcha",
            title=f"Uploads over 50 MB must be split into parts, case {n}",
            status="proposed",
            body=f"Split large uploads into parts of at most 50 MB ({n}).\n",
        )
        for n in range(6)
    }
    with django_capture_on_commit_callbacks(execute=True):
        add_memories(remote, repository, more)
    brain_embed(team_id=team.pk)
    many, page = counted()
    assert len(set(re.findall(r'data-proposal="(\d+)"', page))) > 2  # the new ones have hints
    assert many <= few + 1, (few, many)


def test_without_semantic_search_the_pages_show_no_hints(
    team,
    repository,
    remote,
    client,
    reviewer_user,
    settings,
):
    settings.SEMANTIC_ENABLED = False
    add_memories(remote, repository, MEMORIES)
    proposal = Memory.objects.get(memory_id="20260402-upload-timeouts")
    assert proposal.status == MemoryStatus.PROPOSED
    client.force_login(reviewer_user)
    page = client.get(f"/t/{team.slug}/reviews/p/{proposal.pk}/").content.decode()
    assert "Similar active memories" not in page


def _served_deploy_note(team):  # type: ignore[no-untyped-def]
    served = make_chunk(team, "Deploys go out on Tuesdays after the release review.")
    brain_embed(team_id=team.pk)
    return served


def test_the_import_report_names_imported_chunks_that_nearly_duplicate_served_ones(semantic, team):
    served = _served_deploy_note(team)
    text = "Deploys go out every Tuesday after the release review."
    vector = embedding_model.encode([text])[0].tolist()
    bundle = make_bundle(
        chunks=[chunk(1, text, embedding=embedding(vector)), chunk(2, "Lunch is at noon.")],
        model=embedding_model.MODEL_NAME,
        dim=embedding_model.MODEL_DIM,
    )
    result = bundle_import(team=team, actor=Actor.system(), bundle=bundle)
    imported = Chunk.objects.get(team=team, content=text)
    expected = f"imported chunk #{imported.pk} nearly duplicates served chunk #{served.pk}"
    assert any(w.startswith(expected) for w in result["report"]["warnings"])
    assert not any("Lunch" in w for w in result["report"]["warnings"])


def test_imported_chunks_embedded_later_are_compared_by_the_worker(
    semantic, team, django_capture_on_commit_callbacks
):
    served = _served_deploy_note(team)
    text = "Deploys go out every Tuesday after the release review."
    with django_capture_on_commit_callbacks(execute=True):
        bundle_import(team=team, actor=Actor.system(), bundle=make_bundle(chunks=[chunk(1, text)]))
    imported = Chunk.objects.get(team=team, content=text)
    event = AuditEvent.objects.get(team=team, action="bundle.import_near_duplicates")
    assert event.data["report"]["warnings"][0].startswith(
        f"imported chunk #{imported.pk} nearly duplicates served chunk #{served.pk}"
    )


def _refuse_to_encode(monkeypatch):  # type: ignore[no-untyped-def]
    """A page render must never run the model: make any encode during it fail the test."""

    def refuse(texts):  # type: ignore[no-untyped-def]
        raise AssertionError(f"the page encoded {len(texts)} texts")

    monkeypatch.setattr(embedding_model, "encode", refuse)


def test_the_page_says_the_hints_are_being_computed_until_the_worker_embeds_the_proposal(
    semantic, team, repository, remote, client, reviewer_user, monkeypatch
):
    # No on-commit callbacks run here: the sync's embedding run is not done yet.
    add_memories(remote, repository, MEMORIES)
    proposal = Memory.objects.get(memory_id="20260402-upload-timeouts")
    assert not ProposalVector.objects.filter(memory=proposal).exists()
    client.force_login(reviewer_user)
    url = f"/t/{team.slug}/reviews/p/{proposal.pk}/"
    _refuse_to_encode(monkeypatch)
    page = client.get(url).content.decode()
    assert "Similar memories are being computed" in page
    assert "possible duplicate" not in page
    monkeypatch.undo()
    brain_embed(team_id=team.pk)  # the worker's run: chunks, then the proposals
    assert ProposalVector.objects.filter(memory=proposal, blob_sha=proposal.blob_sha).exists()
    _refuse_to_encode(monkeypatch)
    page = client.get(url).content.decode()
    assert "possible duplicate" in page and "being computed" not in page
    queue = client.get(f"/t/{team.slug}/reviews/").content.decode()
    assert "being computed" not in queue and "possible duplicate" in queue


def test_the_sync_queues_the_run_that_embeds_new_and_changed_proposals(
    semantic, team, repository, remote, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):  # the task runs eagerly
        add_memories(remote, repository, MEMORIES)
    proposal = Memory.objects.get(memory_id="20260402-upload-timeouts")
    first = ProposalVector.objects.get(memory=proposal)
    assert first.blob_sha == proposal.blob_sha
    assert not proposal_vectors_pending(team_id=team.pk)
    changed = dict(MEMORIES["20260402-upload-timeouts"], body="Retry each part three times.\n")
    with django_capture_on_commit_callbacks(execute=True):
        add_memories(remote, repository, {"20260402-upload-timeouts": changed})
    proposal.refresh_from_db()
    again = ProposalVector.objects.get(memory=proposal)
    assert again.blob_sha == proposal.blob_sha != first.blob_sha
    assert bytes(again.embedding) != bytes(first.embedding)
    event = AuditEvent.objects.filter(team=team, action="brain.embed").latest("id")
    assert event.data["proposals"] == 1


def test_the_vectors_of_memories_no_longer_proposed_are_dropped(proposals, team, repository):
    lunch = proposals["20260403-lunch"]
    assert ProposalVector.objects.filter(memory=lunch).exists()
    Memory.objects.filter(pk=lunch.pk).update(status=MemoryStatus.ACTIVE)
    brain_embed(team_id=team.pk)
    assert not ProposalVector.objects.filter(memory=lunch).exists()
