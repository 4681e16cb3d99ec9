"""HTTPS reads have wall-clock deadlines: one per request (with its body) and one per refresh.

The servers here send one byte at a time, each well inside the per-read timeout, so only a
deadline on the whole request or refresh ends the read.
"""

from __future__ import annotations

from memoryadmin.audit import Actor
from sources import tasks
from sources.models import Health, RefreshRun, RunStatus, Source
from sources.services.lifecycle import source_add, source_approve, source_refresh_request
from tests.sources.conftest import drip
from tests.sources.helpers import manifest_text, record_text


def _approved(team, url: str) -> Source:  # type: ignore[no-untyped-def]
    source = source_add(actor=Actor.system(), team=team, location=url)
    return source_approve(actor=Actor.system(), source=source)


def _publish(server, ids: list[str]) -> None:  # type: ignore[no-untyped-def]
    server.serve("memories.json", manifest_text(ids, name="Remote"))
    for record_id in ids:
        server.serve(f"records/{record_id}.md", record_text(record_id))


def _refresh_through_the_task(source: Source) -> RefreshRun:
    run = source_refresh_request(actor=Actor.system(), source=source)
    tasks.source_refresh.delay(source.pk, run.pk)  # eager in tests: runs the task body here
    run.refresh_from_db()
    source.refresh_from_db()
    return run


def test_it_fails_a_refresh_whose_manifest_drips_past_the_request_deadline(
    https_server, team, settings, token_client
):
    settings.SOURCE_HTTP_TIMEOUT = 10  # each byte comes long before a read would time out
    settings.SOURCE_REQUEST_DEADLINE = 1
    _publish(https_server, ["a"])
    source = _approved(team, https_server.base)
    assert _refresh_through_the_task(source).status == RunStatus.SUCCEEDED

    body = manifest_text(["a"], name="Remote").encode()
    https_server.routes["/src/memories.json"] = drip(0.2, body)  # ~10 s for the whole body
    run = _refresh_through_the_task(source)

    assert run.status == RunStatus.FAILED and run.error_code == "deadline"
    assert "MEMORYADMIN_SOURCE_REQUEST_DEADLINE" in run.error
    assert source.health == Health.STALE and source.last_error_code == "deadline"
    records = token_client(team, ["context:read"]).get("/api/context/").json()["records"]
    assert [(r["id"], r["stale"]) for r in records] == [("a", True)]


def test_it_fails_a_refresh_whose_status_line_and_headers_drip(https_server, team, settings):
    settings.SOURCE_HTTP_TIMEOUT = 10
    settings.SOURCE_REQUEST_DEADLINE = 1
    body = manifest_text([], name="Remote").encode()
    https_server.routes["/src/memories.json"] = drip(0.2, body, headers_too=True)
    source = _approved(team, https_server.base)
    run = _refresh_through_the_task(source)
    assert run.status == RunStatus.FAILED and run.error_code == "deadline"
    assert source.health == Health.FAILED  # never read: no older copy to call it stale


def test_it_fails_a_refresh_that_runs_out_of_its_overall_budget(https_server, team, settings):
    """Each record arrives within the request deadline; all of them together do not."""
    settings.SOURCE_HTTP_TIMEOUT = 10
    settings.SOURCE_REQUEST_DEADLINE = 30
    settings.SOURCE_REFRESH_DEADLINE = 1
    ids = [f"r{index}" for index in range(8)]
    https_server.serve("memories.json", manifest_text(ids, name="Remote"))
    for record_id in ids:
        https_server.routes[f"/src/records/{record_id}.md"] = drip(
            0.02, record_text(record_id).encode()
        )
    source = _approved(team, https_server.base)
    run = _refresh_through_the_task(source)
    assert run.status == RunStatus.FAILED and run.error_code == "refresh-deadline"
    assert "MEMORYADMIN_SOURCE_REFRESH_DEADLINE" in run.error
    assert source.health == Health.FAILED and source.current_snapshot is None
    # It stopped when the budget ran out instead of reading every record to the end.
    assert sum(https_server.count(f"records/{record_id}.md") for record_id in ids) < len(ids)


def test_it_reads_a_source_within_its_deadlines_as_before(https_server, team, settings):
    settings.SOURCE_REQUEST_DEADLINE = 5
    settings.SOURCE_REFRESH_DEADLINE = 30
    _publish(https_server, ["a", "b"])
    source = _approved(team, https_server.base)
    run = _refresh_through_the_task(source)
    assert run.status == RunStatus.SUCCEEDED and run.active_count == 2
    assert source.health == Health.FRESH
