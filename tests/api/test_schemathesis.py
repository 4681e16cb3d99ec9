"""Property-based API tests: schemathesis generates requests from the live OpenAPI schema.

Every documented operation is called with generated data (and the schema's examples) by a token
holding every scope on a team seeded with the demo source, review repository and brain. Each
response must not be a server error and must match the schema documented for its status code.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import orjson
import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from bundles import demo as bundles_demo
from bundles.api import schemas as bundles_api
from memoryadmin.models import Scope
from reviews import demo as reviews_demo
from reviews.models import Repository
from reviews.selectors import open_proposals
from sources import demo as sources_demo
from sources.models import Source

CHECKS = [not_a_server_error, response_schema_conformance]
MAX_EXAMPLES = 25

_stats: dict[str, int] = {"operations": 0, "calls": 0}


@pytest.fixture
def api_token(team, admin_user, make_token, settings, tmp_path) -> str:  # type: ignore[no-untyped-def]
    settings.DATA_DIR = tmp_path
    settings.LOCK_DIR = tmp_path / "locks"
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True  # the demo's remote is a local bare repository
    for demo in (sources_demo, reviews_demo, bundles_demo):
        demo.seed(team=team, user=admin_user)
    return make_token(team, [choice.value for choice in Scope], name="schemathesis")


@pytest.fixture(autouse=True)
def in_process_requests() -> Iterator[None]:
    # Like Django's test client: keep the test's transaction open across in-process requests.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture(scope="module", autouse=True)
def report_counts() -> Iterator[None]:
    started = time.monotonic()
    yield
    print(  # shown with -s; the numbers the report quotes
        f"\nschemathesis: {_stats['operations']} operations, {_stats['calls']} calls "
        f"in {time.monotonic() - started:.1f}s"
    )
    if os.environ.get("SCHEMATHESIS_STATS") == "true":
        for name, count in sorted(_stats.items()):
            print(f"  {name}: {count}")


# Loaded from the running app (no database needed to serve it). One test per operation.
# (schemathesis.pytest.from_fixture would run all operations in one test, but it reads
# pytest's removed Node._nodeid and fails on pytest 9.)
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", WSGIHandler())


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_it_answers_every_operation_without_server_errors_and_as_documented(case, api_token):
    key = f"{case.operation.method} {case.operation.path}"
    if _stats.setdefault(key, 0) == 0:
        _stats["operations"] += 1
    _stats[key] += 1
    _stats["calls"] += 1
    response = case.call_and_validate(
        headers={"Authorization": f"Bearer {api_token}"},
        checks=CHECKS,
        environ_base={"REMOTE_ADDR": "127.0.0.1"},  # as a WSGI server (and Django's client) sets
    )
    status = f"{key} {response.status_code}"
    _stats[status] = _stats.get(status, 0) + 1


def _call(api_token: str, path: str, method: str, **case_kwargs):  # type: ignore[no-untyped-def]
    case = schema[path][method].Case(**case_kwargs)
    return case.call_and_validate(
        headers={"Authorization": f"Bearer {api_token}"},
        checks=CHECKS,
        environ_base={"REMOTE_ADDR": "127.0.0.1"},
    )


def test_it_answers_about_real_objects_as_documented(api_token, team, settings):
    source = Source.objects.get(team=team)
    repository = Repository.objects.get(team=team)
    first, second = [m for m in open_proposals(team).order_by("id") if not m.has_secret][:2]

    assert _call(api_token, "/api/sources/{id}/", "GET", path_parameters={"id": source.pk}).json()[
        "counts"
    ]["active"]
    repo_path = "/api/reviews/repositories/{id}/"
    _call(api_token, repo_path, "GET", path_parameters={"id": repository.pk})
    for key in (first.pk, first.memory_id, first.ref):
        _call(api_token, "/api/reviews/proposals/{key}/", "GET", path_parameters={"key": key})
    approved = _call(
        api_token,
        "/api/reviews/proposals/{key}/approve/",
        "POST",
        path_parameters={"key": first.memory_id},
        body={"comment": "fine"},
    )
    assert approved.status_code == 202
    _call(
        api_token,
        "/api/reviews/decisions/{id}/",
        "GET",
        path_parameters={"id": approved.json()["id"]},
    )
    rejected = _call(
        api_token,
        "/api/reviews/batch/",
        "POST",
        body={"action": "reject", "proposals": [second.ref], "comment": "no"},
    )
    assert rejected.status_code == 202, rejected.text

    imported = _call(api_token, "/v1/brain/import", "POST", body=bundles_api.MINIMAL_BUNDLE)
    assert imported.status_code == 200, imported.text
    upload = orjson.dumps(bundles_api.MINIMAL_BUNDLE | {"generator": "upload"})
    uploaded = _call(
        api_token,
        "/v1/brain/import/file",
        "POST",
        body={"file": upload},
        media_type="multipart/form-data",
    )
    assert uploaded.status_code == 200, uploaded.text
    settings.BUNDLE_SYNC_IMPORT_MAX_BYTES = 10  # anything larger becomes a background job
    queued = _call(
        api_token,
        "/v1/brain/import/file",
        "POST",
        body={"file": upload},
        media_type="multipart/form-data",
    )
    assert queued.status_code == 202, queued.text
    job = _call(
        api_token,
        "/v1/brain/import/jobs/{job_id}",
        "GET",
        path_parameters={"job_id": queued.json()["job"]["id"]},
    )
    assert job.json()["state"] in ("queued", "succeeded")
    for path in ("/v1/brain/export", "/v1/brain/export/stream"):
        assert _call(api_token, path, "POST", body={"scope": "full"}).status_code == 200
    _call(api_token, "/api/me/", "GET")
    _call(api_token, "/api/context/", "GET", query={"scope": ["user"]})
