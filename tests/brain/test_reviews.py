"""Repository memories flow into the brain; imports flow back into review as proposals."""

from __future__ import annotations

import orjson

from bundles.models import Chunk, ChunkOrigin, ImportProposal
from formats.memoryai import content_hash
from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from reviews.models import Memory
from reviews.services.decisions import proposal_approve
from reviews.services.repositories import repository_sync
from tests.brain.conftest import exported
from tests.bundles.helpers import chunk, make_bundle
from tests.reviews.conftest import M, memory_text

POSTGRES = "Use PostgreSQL\n\nWhy it matters."
SQL = "Keep SQL explicit\n\nWhy it matters."
SQLITE = "20260201-use-sqlite"
FLAGS = "Use feature flags\n\nThey let us ship dark."
CACHE = "Caching the build failed\n\nThe cache key ignored the lockfile."
GHP = "ghp_" + "a1B2c3D4" * 5


def _counts(team) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    return (
        Chunk.objects.filter(team=team).count(),
        ChunkOrigin.objects.filter(team=team, active=True).count(),
        AuditEvent.objects.filter(team=team, action="brain.mirror").count(),
    )


def test_it_serves_active_memories_and_an_approval_after_it_lands(
    repository, reviewer_user, team, token_client, django_capture_on_commit_callbacks
):
    client = token_client(team, ["bundles:export"])
    chunks = exported(client)
    assert set(chunks) == {POSTGRES, SQL}  # proposals never
    assert chunks[SQL]["memory_type"] == "x_constraint" and chunks[SQL]["zone"] == "critical"
    provenance = chunks[POSTGRES]["metadata"]["memoryadmin"]
    assert provenance["origin"] == "repository" and provenance["repository"] == "app"
    assert provenance["approval"] == "commit" and provenance["approved_by"] == "Agent Smith"
    assert len(provenance["commit"]) == 40
    memory = Memory.objects.get(repository=repository, memory_id=SQLITE)
    with django_capture_on_commit_callbacks(execute=True):
        proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
    chunks = exported(client)
    sqlite = next(c for c in chunks if c.startswith("Use SQLite"))
    assert POSTGRES not in chunks  # superseded by the approval
    provenance = chunks[sqlite]["metadata"]["memoryadmin"]
    assert provenance["approval"] == "review"
    assert provenance["approved_by"] == reviewer_user.username or provenance["approved_by"]
    repository.refresh_from_db()
    assert provenance["commit"] == repository.head_commit
    before = _counts(team)
    repository_sync(repository_id=repository.pk)
    assert _counts(team) == before


def test_it_proposes_imported_dna_for_review_and_serves_it_only_after_approval(
    repository, remote, reviewer_user, team, token_client, django_capture_on_commit_callbacks
):
    bundle = make_bundle(
        chunks=[
            chunk(1, FLAGS, "decision"),
            chunk(2, CACHE, "pitfall", tags=["attempt"]),
            chunk(3, "Plain fact, not DNA", "fact"),
            chunk(4, f"Deploy with the token\n\nUse token={GHP} when deploying.", "decision"),
            chunk(5, POSTGRES, "decision"),  # already in the repository
        ]
    )
    client = token_client(team, ["bundles:import", "bundles:export", "context:read"])
    body = orjson.dumps(bundle)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/v1/brain/import?propose_to={repository.pk}",
            data=body,
            content_type="application/json",
        )
    assert response.status_code == 200, response.content
    report = response.json()["report"]
    proposals = report["proposals"]
    assert proposals["proposed"] == 2 and proposals["skipped_secret"] == 1
    assert proposals["skipped_existing"] == 1
    assert any("github-token" in w for w in report["warnings"])
    assert not any(GHP in w for w in report["warnings"])
    proposal = ImportProposal.objects.get()
    assert proposal.state == "pushed", proposal.detail
    assert remote.log("%an|%s")[0].startswith("test token (agent)|Propose 2 memories") or (
        "(agent)|Propose 2 memories" in remote.log("%an|%s")[0]
    )
    assert GHP not in remote.log("%B")[0]
    proposed = {m.title: m for m in Memory.objects.filter(repository=repository, status="proposed")}
    assert {"Use feature flags", "Caching the build failed"} <= set(proposed)
    flags = proposed["Use feature flags"]
    assert flags.type == "decision" and proposed["Caching the build failed"].type == "attempt"
    assert flags.front_matter["x-memoryadmin"]["origin"] == "import"
    assert not Memory.objects.filter(title="Deploy with the token").exists()
    # Waiting for review: not in the context, not repository knowledge in the brain.
    context = client.get("/api/context/?include=repositories").json()
    assert "Use feature flags" not in {r["title"] for r in context["records"]}
    assert not ChunkOrigin.objects.filter(ref__contains=flags.memory_id).exists()
    assert "memoryadmin" not in exported(client)[FLAGS]["metadata"]
    # Re-importing changes nothing.
    before = (_counts(team), Memory.objects.count(), len(remote.log()))
    with django_capture_on_commit_callbacks(execute=True):
        again = client.post(
            f"/v1/brain/import?propose_to={repository.pk}",
            data=body,
            content_type="application/json",
        ).json()["report"]["proposals"]
    assert again["proposed"] == 0 and again["skipped_existing"] == 3
    assert (_counts(team), Memory.objects.count(), len(remote.log())) == before
    # A human approves: now it is repository knowledge (one chunk, with provenance).
    with django_capture_on_commit_callbacks(execute=True):
        proposal_approve(actor=Actor(user=reviewer_user), memory=flags)
    chunk_row = exported(client)[FLAGS]
    assert chunk_row["metadata"]["memoryadmin"]["origin"] == "repository"
    assert chunk_row["metadata"]["memoryadmin"]["approval"] == "review"
    assert Chunk.objects.filter(team=team, content=FLAGS).count() == 1
    context = client.get("/api/context/?include=repositories").json()
    assert "Use feature flags" in {r["title"] for r in context["records"]}, context


def test_it_refuses_propose_to_outside_the_team_or_without_push(
    repository, other_team, team, token_client
):
    bundle = orjson.dumps(make_bundle(chunks=[chunk(1, FLAGS, "decision")]))
    client = token_client(other_team, ["bundles:import"])
    response = client.post(
        f"/v1/brain/import?propose_to={repository.pk}", data=bundle, content_type="application/json"
    )
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "repository-not-found"
    repository.push_enabled = False
    repository.save()
    client = token_client(team, ["bundles:import"])
    response = client.post(
        f"/v1/brain/import?propose_to={repository.pk}", data=bundle, content_type="application/json"
    )
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "repository-push-disabled"
    response = client.post(
        "/v1/brain/import?propose_to=abc", data=bundle, content_type="application/json"
    )
    assert response.status_code == 400
    assert not Chunk.objects.filter(content=FLAGS).exists()


def test_it_orders_context_pinned_first_with_provenance_and_logs_reads(
    repository, remote, team, tmp_path, token_client
):
    from sources.services.lifecycle import source_add, source_approve
    from sources.services.refresh import source_refresh
    from tests.sources.helpers import record_text, write_source

    remote.commit(
        {
            f"{M}/20260301-never-force.md": memory_text(
                "20260301-never-force", type="constraint", title="Never force-push", pinned=True
            )
        },
        "Pinned rule",
    )
    repository_sync(repository_id=repository.pk)
    write_source(tmp_path, {"a": record_text("a", title="Deploys go out on Tuesdays")})
    source = source_add(actor=Actor.system(), team=team, location=str(tmp_path))
    source_approve(actor=Actor.system(), source=source)
    source_refresh(source_id=source.pk)
    client = token_client(team, ["context:read", "bundles:export"])
    plain = client.get("/api/context/").json()
    assert [r["id"] for r in plain["records"]] == ["a"] and "origin" not in plain["records"][0]
    body = client.get("/api/context/?include=repositories").json()
    rows = body["records"]
    assert [(r["origin"], r["title"]) for r in rows] == [
        ("repository", "Never force-push"),
        ("source", "Deploys go out on Tuesdays"),
        ("repository", "Use PostgreSQL"),
        ("repository", "Keep SQL explicit"),
    ]
    assert rows[0]["pinned"] is True and rows[1]["pinned"] is False
    assert rows[0]["provenance"]["approved_by"] == "Agent Smith"
    assert rows[0]["provenance"]["commit"]
    assert body["count"] == 4
    page = client.get("/api/context/?include=repositories&limit=2&offset=1").json()
    assert [r["title"] for r in page["records"]] == ["Deploys go out on Tuesdays", "Use PostgreSQL"]
    assert client.get("/api/context/?include=everything").status_code == 400
    reads = list(AuditEvent.objects.filter(team=team, action="context.read").order_by("id"))
    assert len(reads) == 3
    assert reads[1].data["refs"][:2] == [
        f"repository:{repository.pk}:20260301-never-force",
        f"source:{source.pk}:a",
    ]
    assert reads[1].data["count"] == 4 and reads[1].actor_token is not None
    assert "Deploys" not in str(reads[1].data)  # ids, never content
    chunks = exported(client)
    export = AuditEvent.objects.filter(team=team, action="bundle.export").latest("id")
    summary = export.data["chunks"]
    assert summary["count"] == len(chunks) == 4
    ids = sorted(c["id"] for c in chunks.values())
    assert all(any(low <= i <= high for low, high in summary["ranges"]) for i in ids)
    from bundles.selectors import chunk_readers

    assert [e.pk for e in chunk_readers(team, ids[0])] == [export.pk]


def test_it_shows_where_each_chunk_came_from_on_the_brain_page(
    repository, client, admin_user, team, django_assert_max_num_queries
):
    from bundles.imports import bundle_import

    bundle_import(
        team=team, actor=Actor.system(), bundle=make_bundle(chunks=[chunk(1, FLAGS, "decision")])
    )
    client.force_login(admin_user)
    # constant: origins are one prefetch; the import runs, the embedding status and the
    # served-to-agents counts are one query each; the live-chunk count is read once, for the
    # embedding progress and the pager both (tests/brain/test_brain_list.py: flat in size)
    with django_assert_max_num_queries(25):
        page = client.get(f"/t/{team.slug}/brain/").content.decode()
    assert f"/t/{team.slug}/reviews/repositories/{repository.pk}/" in page
    assert "approved by Agent Smith" in page
    assert 'href="#events-h">an import</a>' in page
    assert f'<option value="{repository.pk}">app</option>' in page


def test_it_describes_the_mapping_in_the_spec(api_client):
    brain = api_client.get("/v1/spec").json()["brain"]
    assert brain["type_mapping"]["memoryrail"]["constraint"] == {
        "memory_type": "x_constraint",
        "zone": "critical",
        "tags": [],
    }
    assert brain["type_mapping"]["openmemories"]["project"]["tags"] == ["project"]


def test_it_spends_the_proposal_limit_only_on_texts_the_repository_has_not_seen(
    repository, team, token_client, django_capture_on_commit_callbacks, monkeypatch
):
    from bundles.imports import proposals

    monkeypatch.setattr(proposals, "PROPOSE_MAX", 2)
    client = token_client(team, ["bundles:import"])
    seen = [chunk(1, POSTGRES, "decision"), chunk(2, SQL, "decision")]  # in the repository
    new = [
        chunk(3, FLAGS, "decision"),
        chunk(4, CACHE, "pitfall"),
        chunk(5, "Third\n\nx", "procedure"),
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/v1/brain/import?propose_to={repository.pk}",
            data=orjson.dumps(make_bundle(chunks=[*seen, *new])),
            content_type="application/json",
        )
    assert response.status_code == 200, response.content
    report = response.json()["report"]["proposals"]
    # The two seen texts come first and used to fill the limit of 2; now they are counted as
    # seen and the limit goes to new texts (the third new one is left out, and said so).
    assert report["candidates"] == 5
    assert report["skipped_existing"] == 2
    assert report["proposed"] == 2
    assert report["skipped_limit"] == 1
    titles = {item["title"] for item in ImportProposal.objects.get().items}
    assert titles == {"Use feature flags", "Caching the build failed"}


def test_it_fails_an_import_proposal_visibly_once_a_flaky_remote_used_up_its_retries(
    repository, remote, team, token_client, django_capture_on_commit_callbacks
):
    from bundles.tasks import import_proposal_push_task

    hook = remote.bare / "hooks" / "pre-receive"  # a transient failure, every time
    hook.write_text("#!/bin/sh\necho 'the remote end hung up unexpectedly' >&2\nexit 1\n")
    hook.chmod(0o755)
    client = token_client(team, ["bundles:import"])
    with django_capture_on_commit_callbacks(execute=True):  # the first push: retried later
        response = client.post(
            f"/v1/brain/import?propose_to={repository.pk}",
            data=orjson.dumps(make_bundle(chunks=[chunk(1, FLAGS, "decision")])),
            content_type="application/json",
        )
    assert response.status_code == 200, response.content
    proposal = ImportProposal.objects.get()
    assert (proposal.state, proposal.attempts) == ("pending", 1)
    assert "retrying" in proposal.detail

    import_proposal_push_task.apply(args=[proposal.pk], retries=6, throw=False)  # the last
    proposal.refresh_from_db()
    assert (proposal.state, proposal.attempts) == ("failed", 2)
    assert "hung up" in proposal.detail and proposal.finished_at is not None
    assert AuditEvent.objects.filter(team=team, action="brain.propose-failed").count() == 1


LONG = (
    "Always run the database migrations in a separate deploy step before the new code starts "
    "serving traffic, never together with it. Otherwise old workers read new columns."
)


def test_it_puts_the_chunk_text_in_the_proposal_body_under_a_short_title(
    repository, reviewer_user, team, token_client, django_capture_on_commit_callbacks
):
    client = token_client(team, ["bundles:import", "bundles:export"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/v1/brain/import?propose_to={repository.pk}",
            data=orjson.dumps(make_bundle(chunks=[chunk(1, LONG, "decision")])),
            content_type="application/json",
        )
    assert response.status_code == 200, response.content
    memory = Memory.objects.get(
        repository=repository, status="proposed", front_matter__icontains=content_hash(LONG)
    )
    assert len(memory.title) <= 80 and memory.title.endswith("…")
    assert LONG.startswith(memory.title.removesuffix("…"))
    assert memory.body.strip() == LONG  # the whole text, not what the title left over
    with django_capture_on_commit_callbacks(execute=True):
        proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
    # Approved, it is the very chunk that was imported: one chunk, now with its provenance.
    assert Chunk.objects.filter(team=team, content=LONG).count() == 1
    assert exported(client)[LONG]["metadata"]["memoryadmin"]["origin"] == "repository"
