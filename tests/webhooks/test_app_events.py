"""The apps emit their webhook events: real sources, git remotes and imports, a real receiver.

Every flow below runs the real service (local directories, a TLS server, bare git remotes over
file://, the bundle API) with the team's endpoint pointing at an HTTP receiver on 127.0.0.1;
each test checks the signed JSON that arrived there.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

import orjson
import pytest
from django.db import transaction

from bundles.models import Chunk, ImportJob
from memoryadmin.audit import Actor
from reviews.models import Decision, Memory, PushState, ReviewSettings
from reviews.services import index as repository_services
from reviews.services.decisions import proposal_approve, proposals_review
from reviews.services.repositories import repository_create, repository_sync
from sources.fetchers import Credential
from sources.models import Health
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from tests.bundles.helpers import chunk, make_bundle, sample_bundle
from tests.reviews.conftest import M, memory_text
from tests.sources.helpers import manifest_text, record_text, write_source
from webhooks.models import WebhookDelivery

from .conftest import Receiver

SECRET_TOKEN = "s3cret-source-token"  # a test credential that must never leak


def _verified(receiver: Receiver, secret: str) -> list[dict[str, Any]]:
    """Every body the receiver got, each checked exactly as docs/webhooks.md tells receivers."""
    bodies = []
    for received in receiver.requests:
        timestamp = received.headers["X-Memoryadmin-Timestamp"]
        signed = timestamp.encode() + b"." + received.body
        expected = "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(received.headers["X-Memoryadmin-Signature"], expected)
        assert abs(time.time() - int(timestamp)) < 60
        body = json.loads(received.body)
        assert set(body) == {"id", "event", "team", "created_at", "data"}
        assert received.headers["X-Memoryadmin-Event"] == body["event"]
        assert body["team"] == "alpha"
        bodies.append(body)
    return bodies


def _events(bodies: list[dict[str, Any]]) -> list[str]:
    return [body["event"] for body in bodies]


@pytest.fixture
def hook(receiver, make_endpoint):  # type: ignore[no-untyped-def]
    """An endpoint subscribed to every event (so a stray event shows up), and its secret."""
    _, secret = make_endpoint(receiver.url("/hook"))
    return secret


# --- sources ---------------------------------------------------------------------------------


def _refresh(capture, source_id: int) -> None:  # type: ignore[no-untyped-def]
    with capture(execute=True):
        source_refresh(source_id=source_id)


def test_it_sends_stale_once_and_recovered_for_a_local_source(
    team, tmp_path, receiver, hook, django_capture_on_commit_callbacks
):
    root = write_source(tmp_path / "src", {"a": record_text("a")}, name="Team notes")
    with django_capture_on_commit_callbacks(execute=True):
        source = source_add(actor=Actor.system(), team=team, location=str(root))
        source_approve(actor=Actor.system(), source=source)
    source.refresh_from_db()
    assert source.health == Health.FRESH
    assert receiver.requests == []  # never -> fresh is a first refresh, not a recovery

    (root / "memories.json").write_text("{not json", encoding="utf-8")
    _refresh(django_capture_on_commit_callbacks, source.pk)
    _refresh(django_capture_on_commit_callbacks, source.pk)  # still stale: no second event
    source.refresh_from_db()
    assert source.health == Health.STALE
    code, error = source.last_error_code, source.last_error
    (root / "memories.json").write_text(manifest_text(["a"], "Team notes"), encoding="utf-8")
    _refresh(django_capture_on_commit_callbacks, source.pk)

    bodies = _verified(receiver, hook)
    assert _events(bodies) == ["source.stale", "source.recovered"]
    stale, recovered = (body["data"] for body in bodies)
    common = {
        "source": source.pk,
        "label": "Team notes",
        "identity": source.identity,
        "kind": "local",
        "state": "approved",
    }
    assert stale == {
        **common,
        "from": "fresh",
        "to": "stale",
        "reason": code,
        "error": error,
    }
    assert code and error
    assert recovered == {
        **common,
        "from": "stale",
        "to": "fresh",
        "reason": "refresh succeeded",
        "error": "",
    }


def test_it_sends_denied_and_recovered_for_a_401_source_without_its_credential(
    team,
    https_server,
    receiver,
    hook,
    django_capture_on_commit_callbacks,
):
    https_server.serve("memories.json", manifest_text(["a"], name="Remote"))
    https_server.serve("records/a.md", record_text("a"))
    with django_capture_on_commit_callbacks(execute=True):
        source = source_add(
            actor=Actor.system(),
            team=team,
            location=https_server.base,
            credential=Credential(kind="bearer", token=SECRET_TOKEN),
        )
        source_approve(actor=Actor.system(), source=source)
    assert receiver.requests == []
    https_server.serve("memories.json", f"bad token {SECRET_TOKEN}", status=401)
    _refresh(django_capture_on_commit_callbacks, source.pk)
    https_server.serve("memories.json", manifest_text(["a"], name="Remote"))
    _refresh(django_capture_on_commit_callbacks, source.pk)

    bodies = _verified(receiver, hook)
    assert _events(bodies) == ["source.denied", "source.recovered"]
    denied, recovered = (body["data"] for body in bodies)
    assert denied["source"] == source.pk and denied["identity"] == https_server.base
    assert (denied["kind"], denied["from"], denied["to"]) == ("https", "fresh", "denied")
    assert denied["reason"] and denied["error"]
    assert (recovered["from"], recovered["to"]) == ("denied", "fresh")
    assert not any(SECRET_TOKEN in r.body.decode() for r in receiver.requests)
    assert not WebhookDelivery.objects.filter(payload__icontains=SECRET_TOKEN).exists()


# --- reviews ---------------------------------------------------------------------------------


def _add_repository(team, remote, capture):  # type: ignore[no-untyped-def]
    """Add the repository; its first sync runs after commit (tasks are eager)."""
    with capture(execute=True):
        repo = repository_create(actor=Actor.system(), team=team, name="app", remote_url=remote.url)
    repo.refresh_from_db()
    assert repo.last_sync_ok, repo.last_error
    return repo


def _sync(repo, capture) -> None:  # type: ignore[no-untyped-def]
    with capture(execute=True):
        repository_sync(repository_id=repo.pk)


def test_it_summarises_the_first_index_then_sends_each_new_proposal(
    team,
    remote,
    data_dir,
    receiver,
    hook,
    django_capture_on_commit_callbacks,
):
    repo = _add_repository(team, remote, django_capture_on_commit_callbacks)
    [summary] = _verified(receiver, hook)
    assert summary["event"] == "proposal.created"
    assert summary["data"] == {
        "summary": True,
        "repository": {"id": repo.pk, "name": "app"},
        "reason": "first-index",
        "count": 3,
        "omitted": 3,
    }
    receiver.requests.clear()

    remote.commit(
        {
            f"{M}/20260301-retry-uploads.md": memory_text(
                "20260301-retry-uploads",
                type="gotcha",
                title="Uploads need a retry",
                status="proposed",
            ),
            # An active memory proposed again counts; an open proposal edited again does not.
            f"{M}/20260102-no-orm-magic.md": memory_text(
                "20260102-no-orm-magic",
                type="constraint",
                title="Keep SQL explicit",
                status="proposed",
            ),
            f"{M}/20260203-cache-attempt.md": memory_text(
                "20260203-cache-attempt",
                type="attempt",
                title="Caching the manifest failed",
                status="proposed",
                body="Edited while waiting.\n",
            ),
        },
        "Agents propose",
    )
    _sync(repo, django_capture_on_commit_callbacks)
    _sync(repo, django_capture_on_commit_callbacks)  # nothing new: nothing sent

    bodies = _verified(receiver, hook)
    assert _events(bodies) == ["proposal.created", "proposal.created"]
    assert len({body["id"] for body in bodies}) == 2
    by_id = {body["data"]["memory_id"]: body["data"] for body in bodies}
    new = Memory.objects.get(repository=repo, memory_id="20260301-retry-uploads")
    assert by_id["20260301-retry-uploads"] == {
        "summary": False,
        "repository": {"id": repo.pk, "name": "app"},
        "memory_id": "20260301-retry-uploads",
        "ref": new.ref,
        "type": "gotcha",
        "title": "Uploads need a retry",
        "path": f"{M}/20260301-retry-uploads.md",
        "supersedes": "",
    }
    assert by_id["20260102-no-orm-magic"]["type"] == "constraint"


def test_it_bounds_the_events_of_one_sync_with_a_summary(
    team,
    remote,
    data_dir,
    receiver,
    hook,
    monkeypatch,
    django_capture_on_commit_callbacks,
):
    repo = _add_repository(team, remote, django_capture_on_commit_callbacks)
    receiver.requests.clear()
    monkeypatch.setattr(repository_services, "PROPOSAL_EVENTS_MAX", 2)
    remote.commit(
        {
            f"{M}/2026040{i}-idea.md": memory_text(
                f"2026040{i}-idea", type="gotcha", title=f"Idea {i}", status="proposed"
            )
            for i in range(1, 4)
        },
        "Three proposals",
    )
    _sync(repo, django_capture_on_commit_callbacks)

    bodies = _verified(receiver, hook)
    assert _events(bodies) == ["proposal.created"] * 3
    assert [body["data"]["summary"] for body in bodies] == [False, False, True]
    assert bodies[2]["data"] == {
        "summary": True,
        "repository": {"id": repo.pk, "name": "app"},
        "reason": "too-many",
        "count": 3,
        "omitted": 1,
    }


def _proposal(repo, memory_id: str) -> Memory:  # type: ignore[no-untyped-def]
    return Memory.objects.get(repository=repo, memory_id=memory_id)


def test_it_sends_decision_made_for_an_approval_and_a_batch_rejection(
    team,
    remote,
    data_dir,
    receiver,
    hook,
    reviewer_user,
    token_client,
    django_capture_on_commit_callbacks,
):
    repo = _add_repository(team, remote, django_capture_on_commit_callbacks)
    receiver.requests.clear()
    attempt = _proposal(repo, "20260203-cache-attempt")
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_approve(
            actor=Actor(user=reviewer_user), memory=attempt, comment="Good catch"
        )
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED  # the push ran too, and sent no push.failed

    sqlite, key = _proposal(repo, "20260201-use-sqlite"), _proposal(repo, "20260202-deploy-key")
    client = token_client(team, ["reviews:write"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/reviews/batch/",
            {"action": "reject", "proposals": [str(sqlite.pk), str(key.pk)], "comment": "Not now"},
            format="json",
        )
    assert response.status_code == 202, response.content

    bodies = _verified(receiver, hook)
    assert _events(bodies) == ["decision.made", "decision.made"]
    approved, rejected = (body["data"] for body in bodies)
    assert approved == {
        "decision": decision.pk,
        "kind": "approve",
        "repository": {"id": repo.pk, "name": "app"},
        "reviewer": "rita",
        "actor": "user:rita",
        "comment": "Good catch",
        "secret_override": False,
        "push_state": "pending",
        "url": f"/t/{team.slug}/reviews/decisions/{decision.pk}/",
        "proposals": [
            {
                "id": attempt.pk,
                "memory_id": "20260203-cache-attempt",
                "ref": attempt.ref,
                "type": "attempt",
                "title": "Caching the manifest failed",
                "path": f"{M}/20260203-cache-attempt.md",
                "url": f"/t/{team.slug}/reviews/decisions/{decision.pk}/#item-{attempt.ref}",
                "first_approval_by": None,
            }
        ],
    }
    assert rejected["kind"] == "reject" and rejected["comment"] == "Not now"
    assert rejected["reviewer"] is None and rejected["actor"].startswith("token:")
    assert [p["ref"] for p in rejected["proposals"]] == [sqlite.ref, key.ref]
    assert rejected["decision"] == response.json()["decisions"][0]["id"]


def test_it_sends_decision_made_only_for_the_second_of_two_approvals(
    team,
    remote,
    data_dir,
    receiver,
    hook,
    reviewer_user,
    admin_user,
    django_capture_on_commit_callbacks,
):
    ReviewSettings.objects.create(team=team, require_two_approvals=True)
    remote.commit(
        {
            f"{M}/20260301-no-friday.md": memory_text(
                "20260301-no-friday",
                type="constraint",
                title="No Friday deploys",
                status="proposed",
            )
        },
        "Propose a constraint",
    )
    repo = _add_repository(team, remote, django_capture_on_commit_callbacks)
    receiver.requests.clear()
    constraint = _proposal(repo, "20260301-no-friday")
    with django_capture_on_commit_callbacks(execute=True):
        first = proposals_review(
            actor=Actor(user=reviewer_user), team=team, memory_ids=[constraint.pk], kind="approve"
        )
    assert first.first_approvals and not first.decisions
    assert receiver.requests == []  # a first approval is not a decision
    with django_capture_on_commit_callbacks(execute=True):
        second = proposals_review(
            actor=Actor(user=admin_user), team=team, memory_ids=[constraint.pk], kind="approve"
        )

    [body] = _verified(receiver, hook)
    assert body["event"] == "decision.made"
    assert body["data"]["decision"] == second.decisions[0].pk
    assert body["data"]["reviewer"] == "alice"
    assert body["data"]["proposals"][0]["first_approval_by"] == "user:rita"


def test_it_sends_push_failed_when_the_remote_refuses_the_push(
    team,
    remote,
    data_dir,
    receiver,
    hook,
    reviewer_user,
    django_capture_on_commit_callbacks,
):
    repo = _add_repository(team, remote, django_capture_on_commit_callbacks)
    receiver.requests.clear()
    hook_path = remote.bare / "hooks" / "pre-receive"
    hook_path.write_text("#!/bin/sh\necho 'pushes are frozen' >&2\nexit 1\n", encoding="utf-8")
    hook_path.chmod(0o755)
    attempt = _proposal(repo, "20260203-cache-attempt")
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_approve(actor=Actor(user=reviewer_user), memory=attempt)
    decision.refresh_from_db()
    assert decision.state == PushState.FAILED

    bodies = _verified(receiver, hook)
    assert _events(bodies) == ["decision.made", "push.failed"]
    failed = bodies[1]["data"]
    assert failed == {
        "decision": decision.pk,
        "kind": "approve",
        "repository": {"id": repo.pk, "name": "app"},
        "branch": "main",
        "state": "failed",
        "reason": decision.state_detail,
        "attempts": 1,
        "refs": [attempt.ref],
    }
    assert "pushes are frozen" in failed["reason"] and "hook declined" in failed["reason"]


def test_it_sends_push_failed_for_a_conflict(
    team,
    remote,
    data_dir,
    receiver,
    hook,
    reviewer_user,
    django_capture_on_commit_callbacks,
):
    repo = _add_repository(team, remote, django_capture_on_commit_callbacks)
    receiver.requests.clear()
    attempt = _proposal(repo, "20260203-cache-attempt")
    # The agent edits the proposal upstream after the reviewer saw it (no sync in between).
    remote.commit(
        {
            f"{M}/20260203-cache-attempt.md": memory_text(
                "20260203-cache-attempt", type="attempt", title="Changed", status="proposed"
            )
        },
        "Edit upstream",
    )
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_approve(actor=Actor(user=reviewer_user), memory=attempt)
    decision.refresh_from_db()
    assert decision.state == PushState.CONFLICT

    events = _events(_verified(receiver, hook))
    assert events == ["decision.made", "push.failed"]
    failed = json.loads(receiver.requests[1].body)["data"]
    assert failed["state"] == "conflict"
    assert failed["reason"] == decision.state_detail and "changed upstream" in failed["reason"]


# --- bundles ---------------------------------------------------------------------------------

IMPORT = "/v1/brain/import"


def _post_bundle(client, body: bytes, capture):  # type: ignore[no-untyped-def]
    with capture(execute=True):
        return client.generic("POST", IMPORT, body, content_type="application/json")


def test_it_sends_import_finished_for_sync_imports_with_the_report_numbers(
    team, token_client, receiver, hook, django_capture_on_commit_callbacks
):
    client = token_client(team, ["bundles:import"])
    response = _post_bundle(
        client, orjson.dumps(sample_bundle()), django_capture_on_commit_callbacks
    )
    assert response.status_code == 200, response.content
    report = response.json()["report"]
    bad = sample_bundle()
    bad["format"] = "something-else"
    refused = _post_bundle(client, orjson.dumps(bad), django_capture_on_commit_callbacks)
    assert refused.status_code == 422

    bodies = _verified(receiver, hook)
    assert _events(bodies) == ["import.finished", "import.finished"]
    ok, failed = (body["data"] for body in bodies)
    assert ok == {
        "job": None,
        "success": True,
        "counts": {
            name: report[name]
            for name in (
                "chunks",
                "memory_edges",
                "entities",
                "l2_sessions",
                "mood_states",
                "agents",
            )
        },
        "warnings": len(report["warnings"]),
        "embedding_model_match": report["embedding_model_match"],
    }
    assert ok["counts"]["chunks"]["inserted"] == 6
    assert failed == {
        "job": None,
        "success": False,
        "error": {"code": refused.json()["error"]["code"], "message": failed["error"]["message"]},
    }


def test_it_sends_import_finished_for_background_jobs_that_succeed_or_fail(
    team,
    settings,
    data_dir,
    token_client,
    receiver,
    hook,
    django_capture_on_commit_callbacks,
):
    settings.BUNDLE_SYNC_IMPORT_MAX_BYTES = 64
    client = token_client(team, ["bundles:import"])
    response = _post_bundle(
        client, orjson.dumps(sample_bundle()), django_capture_on_commit_callbacks
    )
    assert response.status_code == 202, response.content
    good = ImportJob.objects.get(pk=response.json()["job"]["id"])
    bundle = make_bundle(chunks=[chunk(i, f"memory {i}") for i in range(5)])
    del bundle["mood_states"]
    raw = orjson.dumps(bundle)[:-1] + b',"mood_states":[' + b"[" * 5000 + b"]" * 5000 + b"]}"
    response = _post_bundle(client, raw, django_capture_on_commit_callbacks)
    assert response.status_code == 202
    bad = ImportJob.objects.get(pk=response.json()["job"]["id"])
    good.refresh_from_db()
    bad.refresh_from_db()
    assert (good.state, bad.state) == ("succeeded", "failed")

    bodies = _verified(receiver, hook)
    assert _events(bodies) == ["import.finished", "import.finished"]
    ok, failed = (body["data"] for body in bodies)
    assert ok["job"] == good.pk and ok["success"] is True
    assert ok["counts"]["chunks"] == good.report["report"]["chunks"]
    assert failed["job"] == bad.pk and failed["success"] is False
    assert failed["error"]["code"] == bad.error_code
    assert "counts" not in failed


# --- nothing is sent for a change that rolls back ---------------------------------------------


class Abort(Exception):
    """Raised to roll a transaction back on purpose."""


def test_it_sends_nothing_when_the_state_change_rolls_back(
    team,
    tmp_path,
    remote,
    data_dir,
    receiver,
    hook,
    reviewer_user,
    django_capture_on_commit_callbacks,
):
    root = write_source(tmp_path / "src", {"a": record_text("a")})
    with django_capture_on_commit_callbacks(execute=True):
        source = source_add(actor=Actor.system(), team=team, location=str(root))
    repo = _add_repository(team, remote, django_capture_on_commit_callbacks)
    receiver.requests.clear()
    WebhookDelivery.objects.all().delete()
    decisions, chunks = Decision.objects.count(), Chunk.objects.filter(team=team).count()
    (root / "memories.json").write_text("{not json", encoding="utf-8")
    attempt = _proposal(repo, "20260203-cache-attempt")

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with pytest.raises(Abort), transaction.atomic():
            source_refresh(source_id=source.pk)  # would be source.stale
            raise Abort
        with pytest.raises(Abort), transaction.atomic():
            proposal_approve(actor=Actor(user=reviewer_user), memory=attempt)
            raise Abort
        with pytest.raises(Abort), transaction.atomic():
            from bundles.imports import bundle_import

            bundle_import(team=team, actor=Actor.system(), bundle=sample_bundle())
            raise Abort

    assert callbacks == []
    assert receiver.requests == []
    assert not WebhookDelivery.objects.exists()
    source.refresh_from_db()
    assert source.health == Health.FRESH
    assert Decision.objects.count() == decisions
    assert Chunk.objects.filter(team=team).count() == chunks
