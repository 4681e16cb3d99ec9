"""A re-import does not propose again what reviewers rejected, approved or still have waiting.

Real git throughout: imports push proposals to a bare remote over file://, reviewers reject
through the real service (the push deletes the file upstream), then the bundle comes again.
"""

from __future__ import annotations

import importlib
from typing import Any

import orjson
import pytest
from django.apps import apps
from django.urls import reverse

from bundles.models import ImportProposal
from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from reviews.models import Decision, DecisionItem, Memory, PushState
from reviews.services.decisions import proposal_approve, proposal_reject
from reviews.services.push import repository_push_pending
from reviews.services.repositories import repository_sync
from tests.bundles.helpers import chunk, make_bundle
from tests.reviews.conftest import M

FLAGS = "Use feature flags\n\nThey let us ship dark."
CACHE = "Caching the build failed\n\nThe cache key ignored the lockfile."
WHY = "We agreed on trunk-based releases; flags are not the way here."


def import_bundle(client: Any, repository: Any, chunks: list[dict[str, Any]], capture) -> dict:  # type: ignore[no-untyped-def]
    """Import with propose_to; the proposal push task runs (real git) when `capture` is given."""
    body = orjson.dumps(make_bundle(chunks=chunks))
    url = f"/v1/brain/import?propose_to={repository.pk}"
    if capture is None:
        response = client.post(url, data=body, content_type="application/json")
    else:
        with capture(execute=True):
            response = client.post(url, data=body, content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()["report"]


def proposed(repository: Any, title: str) -> Memory:
    return Memory.objects.get(repository=repository, title=title, status="proposed")


def reject(memory: Memory, user: Any, capture, comment: str = WHY) -> Decision:  # type: ignore[no-untyped-def]
    with capture(execute=True):
        decision = proposal_reject(actor=Actor(user=user), memory=memory, comment=comment)
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED, decision.state_detail
    return decision


@pytest.fixture
def importer(team, token_client):  # type: ignore[no-untyped-def]
    return token_client(team, ["bundles:import", "bundles:export"])


BUNDLE = [chunk(1, FLAGS, "decision"), chunk(2, CACHE, "pitfall", tags=["attempt"])]


def test_it_does_not_propose_a_rejected_text_again_and_says_why(
    repository, remote, reviewer_user, importer, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    first = import_bundle(importer, repository, BUNDLE, capture)["proposals"]
    assert first["proposed"] == 2 and first["skipped_rejected"] == 0
    flags = proposed(repository, "Use feature flags")
    path = flags.path
    decision = reject(flags, reviewer_user, capture)
    assert not remote.exists(path)  # the review gate deleted the file upstream
    assert not Memory.objects.filter(repository=repository, title="Use feature flags").exists()
    item = decision.items.get()
    assert item.content_hash and item.memory_id is None  # the text outlives the index row

    commits = len(remote.log())
    report = import_bundle(importer, repository, BUNDLE, capture)
    again = report["proposals"]
    assert again["candidates"] == 2 and again["proposed"] == 0
    assert again["skipped_rejected"] == 1  # FLAGS: rejected
    assert again["skipped_existing"] == 1  # CACHE: still waiting in the queue
    assert again["proposal"] is None
    assert ImportProposal.objects.count() == 1
    assert len(remote.log()) == commits and not remote.exists(path)
    spec = importer.get("/v1/spec").json()["brain"]
    assert spec["report_proposals"] == list(again)  # every key of the section, in order
    assert "skipped_rejected" in spec["propose_to"]
    why = [w for w in report["warnings"] if "not proposed" in w]
    assert why == [
        f"chunks[0]: not proposed to app: rejected as {item.ref} by {decision.actor_label} on "
        f"{decision.created_at:%Y-%m-%d} (decision #{decision.pk}): {WHY}"
    ]


def test_it_proposes_a_rejected_text_again_once_a_reviewer_allows_it(
    repository, remote, reviewer_user, importer, token_client, team,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    capture = django_capture_on_commit_callbacks
    import_bundle(importer, repository, BUNDLE, capture)
    decision = reject(proposed(repository, "Use feature flags"), reviewer_user, capture)
    ref = decision.items.get().ref
    reviewer_api = token_client(team, ["reviews:write", "reviews:read"])
    url = reverse("api-decision-allow-reproposal", args=[decision.pk])
    response = reviewer_api.post(url, {"refs": [ref], "comment": "Flags are back"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["reproposal_allowed"] == [ref]
    event = AuditEvent.objects.get(action="review.reproposal-allow")
    assert event.data["refs"] == [ref] and event.data["comment"] == "Flags are back"
    assert event.data["rejection_comment"] == WHY and event.target_id == str(decision.pk)
    # Allowing twice changes nothing and records nothing.
    assert reviewer_api.post(url, {}, format="json").status_code == 200
    assert AuditEvent.objects.filter(action="review.reproposal-allow").count() == 1

    again = import_bundle(importer, repository, BUNDLE, capture)["proposals"]
    assert again["proposed"] == 1 and again["skipped_rejected"] == 0
    back = proposed(repository, "Use feature flags")
    assert remote.exists(back.path) and 'status: "proposed"' in remote.show(back.path)
    # Rejected a second time, it stays out again: the new rejection was not lifted.
    second = reject(back, reviewer_user, capture, comment="Still no.")
    third = import_bundle(importer, repository, BUNDLE, capture)
    assert third["proposals"]["skipped_rejected"] == 1 and third["proposals"]["proposed"] == 0
    assert f"(decision #{second.pk}): Still no." in " ".join(third["warnings"])


def test_it_refuses_to_lift_what_is_not_a_landed_rejection(
    repository, reviewer_user, token_client, team, django_capture_on_commit_callbacks
):
    from tests.reviews.test_workflow import ATTEMPT, SQLITE, proposal

    capture = django_capture_on_commit_callbacks
    client = token_client(team, ["reviews:write"])
    with capture(execute=True):
        approval = proposal_approve(
            actor=Actor(user=reviewer_user), memory=proposal(repository, SQLITE)
        )
    response = client.post(
        reverse("api-decision-allow-reproposal", args=[approval.pk]), {}, format="json"
    )
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "decision-not-rejection"
    pending = proposal_reject(
        actor=Actor(user=reviewer_user), memory=proposal(repository, ATTEMPT), comment="no"
    )  # not pushed: the on-commit push never runs here
    response = client.post(
        reverse("api-decision-allow-reproposal", args=[pending.pk]), {}, format="json"
    )
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "rejection-not-pushed"
    with capture(execute=True):
        repository_push_pending(repository_id=repository.pk)
    response = client.post(
        reverse("api-decision-allow-reproposal", args=[pending.pk]),
        {"refs": ["DEC-0000"]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "ref-unknown"
    assert not AuditEvent.objects.filter(action="review.reproposal-allow").exists()


def test_it_does_not_propose_the_text_of_a_rejected_agent_proposal(
    repository, reviewer_user, importer, django_capture_on_commit_callbacks
):
    """Rejections count by text, not by who proposed: an agent's own file, rejected, keeps
    the same text out of imports."""
    from tests.reviews.test_workflow import ATTEMPT, proposal

    capture = django_capture_on_commit_callbacks
    memory = proposal(repository, ATTEMPT)  # "Caching the manifest failed", pushed by an agent
    reject(memory, reviewer_user, capture)
    text = "Caching the manifest failed\n\nWhy it matters."
    report = import_bundle(importer, repository, [chunk(1, text, "pitfall")], capture)
    assert report["proposals"]["skipped_rejected"] == 1 and report["proposals"]["proposed"] == 0


def test_it_does_not_propose_an_approved_text_removed_upstream_since(
    repository, remote, reviewer_user, importer, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    import_bundle(importer, repository, BUNDLE[:1], capture)
    flags = proposed(repository, "Use feature flags")
    with capture(execute=True):
        proposal_approve(actor=Actor(user=reviewer_user), memory=flags)
    remote.commit({flags.path: None}, "Drop the flags memory")  # a human removes it in git
    repository_sync(repository_id=repository.pk)
    assert not Memory.objects.filter(repository=repository, memory_id=flags.memory_id).exists()
    again = import_bundle(importer, repository, BUNDLE[:1], capture)["proposals"]
    assert again["proposed"] == 0 and again["skipped_existing"] == 1
    assert again["skipped_rejected"] == 0


def test_it_counts_proposals_not_pushed_yet_as_waiting(repository, remote, importer):
    """Two imports before the push task ran: the second proposes nothing twice."""
    first = import_bundle(importer, repository, BUNDLE, None)["proposals"]
    assert first["proposed"] == 2
    assert ImportProposal.objects.get().state == "pending"  # its push task never ran
    second = import_bundle(importer, repository, BUNDLE, None)["proposals"]
    assert second["proposed"] == 0 and second["skipped_existing"] == 2
    assert ImportProposal.objects.count() == 1


def test_it_lets_a_reviewer_allow_a_reproposal_from_the_history_page(
    repository, reviewer_user, viewer_user, importer, client, team,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    capture = django_capture_on_commit_callbacks
    import_bundle(importer, repository, BUNDLE, capture)
    decision = reject(proposed(repository, "Use feature flags"), reviewer_user, capture)
    ref = decision.items.get().ref
    history = reverse("review-history", args=[team.slug])
    client.force_login(viewer_user)
    assert f"Allow imports to propose {ref} again" not in client.get(history).content.decode()
    client.force_login(reviewer_user)
    assert f"Allow imports to propose {ref} again" in client.get(history).content.decode()
    response = client.post(
        reverse("decision-allow-reproposal", args=[team.slug, decision.pk]),
        {"ref": ref, "next": history},
        follow=True,
    )
    page = response.content.decode()
    assert f"Imports may propose {ref} again" in page
    assert f"imports may propose it again (allowed by {Actor(user=reviewer_user).label})" in page
    item = DecisionItem.objects.get(decision=decision)
    assert item.reproposal_allowed_at is not None


def test_it_backfills_the_text_of_earlier_decisions(
    repository, reviewer_user, importer, django_capture_on_commit_callbacks
):
    """Migration reviews/0003: rejections made before the hashes existed still count."""
    capture = django_capture_on_commit_callbacks
    import_bundle(importer, repository, BUNDLE, capture)
    gone = reject(proposed(repository, "Use feature flags"), reviewer_user, capture)
    waiting = proposal_reject(
        actor=Actor(user=reviewer_user), memory=proposed(repository, "Caching the build failed"),
        comment="no",
    )  # fmt: skip
    expected = dict(DecisionItem.objects.values_list("pk", "content_hash"))
    recorded = dict(DecisionItem.objects.values_list("pk", "proposed_hash"))
    DecisionItem.objects.update(content_hash="", proposed_hash="")
    migration = importlib.import_module("reviews.migrations.0003_decision_item_content_hash")
    migration.backfill_content_hashes(apps, None)
    # The rejected file is gone from the index: its text comes from the import that wrote it.
    item = gone.items.get()
    assert item.memory_id is None
    item.refresh_from_db()
    assert item.content_hash == expected[item.pk] or item.content_hash == recorded[item.pk]
    assert item.content_hash == ImportProposal.objects.get().items[0]["content_hash"]
    # Still indexed: hashed from the memory itself.
    other = waiting.items.get()
    other.refresh_from_db()
    assert (other.content_hash, other.proposed_hash) == (expected[other.pk], recorded[other.pk])
    assert f"{M}/" in other.path
