"""The HTTPS fetcher against a real TLS server on loopback (test CA via SSL_CERT_FILE)."""

from __future__ import annotations

import pytest

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from sources import selectors
from sources.fetchers import Credential
from sources.models import Health, RefreshRun, RunStatus, Source
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from tests.sources.conftest import slow
from tests.sources.helpers import manifest_text, record_text


def _publish(server, ids: list[str]) -> None:  # type: ignore[no-untyped-def]
    server.serve("memories.json", manifest_text(ids, name="Remote"))
    for record_id in ids:
        server.serve(f"records/{record_id}.md", record_text(record_id))


def _approved(team, url: str, credential: Credential | None = None) -> Source:  # type: ignore[no-untyped-def]
    source = source_add(actor=Actor.system(), team=team, location=url, credential=credential)
    return source_approve(actor=Actor.system(), source=source)


def _refresh(source: Source) -> RefreshRun:
    run = source_refresh(source_id=source.pk)
    source.refresh_from_db()
    return run


def test_it_reads_an_https_source(https_server, team):
    _publish(https_server, ["a", "b"])
    source = _approved(team, https_server.base)
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert source.health == Health.FRESH
    assert source.display_name == "Remote"
    assert sorted(r.record_id for r in selectors.context_records(team)) == ["a", "b"]


def test_it_sends_conditional_requests_and_reuses_unchanged_records(https_server, team):
    _publish(https_server, ["a", "b"])
    source = _approved(team, https_server.base)
    _refresh(source)
    before = len(https_server.requests)
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED and not run.changed
    assert run.reused_count == 2 and run.parsed_count == 0
    second = https_server.requests[before:]
    assert len(second) == 3
    assert all("If-None-Match" in headers for _, headers in second)


def test_it_marks_denied_on_401_hides_records_and_recovers(https_server, team):
    _publish(https_server, ["a"])
    source = _approved(team, https_server.base, Credential(kind="bearer", token="s3cret-token"))
    _refresh(source)
    assert https_server.requests[-1][1]["Authorization"] == "Bearer s3cret-token"
    https_server.serve("memories.json", b"no", status=401)
    run = _refresh(source)
    assert run.status == RunStatus.DENIED
    assert source.health == Health.DENIED and source.denied_since is not None
    assert list(selectors.context_records(team)) == []
    _publish(https_server, ["a"])
    https_server.serve("records/a.md", record_text("a", title="Changed"))
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED
    assert source.health == Health.FRESH and source.denied_since is None
    assert [r.title for r in selectors.context_records(team)] == ["Changed"]
    texts = [source.last_error, *RefreshRun.objects.values_list("error", flat=True)]
    texts += [f"{e.summary} {e.data}" for e in AuditEvent.objects.all()]
    assert not any("s3cret-token" in text for text in texts)
    assert "s3cret-token" not in source.credential_encrypted


def test_it_marks_denied_on_403_for_a_record(https_server, team):
    _publish(https_server, ["a"])
    https_server.serve("records/a.md", b"", status=403)
    source = _approved(team, https_server.base)
    run = _refresh(source)
    assert run.status == RunStatus.DENIED and source.health == Health.DENIED


def test_it_keeps_the_snapshot_and_marks_stale_on_500(https_server, team):
    _publish(https_server, ["a"])
    source = _approved(team, https_server.base)
    _refresh(source)
    snapshot_id = source.current_snapshot_id
    https_server.serve("memories.json", b"oops", status=500)
    run = _refresh(source)
    assert run.status == RunStatus.FAILED and run.error_code == "http-error"
    assert source.health == Health.STALE and source.stale_since is not None
    assert source.current_snapshot_id == snapshot_id
    records = selectors.context_records(team)
    assert [r.record_id for r in records] == ["a"]


def test_it_times_out_and_marks_stale(https_server, team, settings):
    settings.SOURCE_HTTP_TIMEOUT = 1
    https_server.routes["/src/memories.json"] = slow(3, (200, {}, manifest_text([]).encode()))
    source = _approved(team, https_server.base)
    run = _refresh(source)
    assert run.status == RunStatus.FAILED and run.error_code == "timeout"
    assert source.health == Health.FAILED  # never read: nothing older to serve


def test_it_stops_reading_an_oversized_response_while_streaming(https_server, team, settings):
    settings.SOURCE_MAX_MANIFEST_BYTES = 10_000
    https_server.serve("memories.json", b" " * 20_000_000, no_length="1")
    source = _approved(team, https_server.base)
    run = _refresh(source)
    assert run.status == RunStatus.FAILED and run.error_code == "too-large"


def test_it_rejects_an_oversized_record(https_server, team, settings):
    settings.SOURCE_MAX_RESPONSE_BYTES = 2_000
    _publish(https_server, ["a", "big"])
    https_server.serve("records/big.md", record_text("big", body="x" * 5_000))
    source = _approved(team, https_server.base)
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED
    assert [(r.record_id, r.code) for r in source.current_snapshot.rejections.all()] == [
        ("big", "too-large")
    ]


def test_it_refuses_a_redirect_to_another_origin(https_server, team):
    other = f"https://localhost:{https_server.port}/src/memories.json"
    https_server.serve("memories.json", b"", status=302, Location=other)
    source = _approved(team, https_server.base)
    run = _refresh(source)
    assert run.status == RunStatus.FAILED and run.error_code == "redirect-refused"
    assert https_server.count("memories.json") == 1


def test_it_follows_a_same_origin_redirect(https_server, team):
    _publish(https_server, ["a"])
    https_server.routes["/old/memories.json"] = (301, {"Location": "/src/memories.json"}, b"")
    https_server.routes["/old/records/a.md"] = (301, {"Location": "/src/records/a.md"}, b"")
    source = _approved(team, f"https://127.0.0.1:{https_server.port}/old/")
    run = _refresh(source)
    assert run.status == RunStatus.SUCCEEDED, run.error


def test_it_refuses_plain_http(team, settings):
    from django.core.exceptions import ValidationError

    settings.SOURCE_ALLOW_HTTP_LOOPBACK = False
    with pytest.raises(ValidationError):
        _approved(team, "http://127.0.0.1:9/src/")
    # Added while the development setting allowed it, refreshed after it was turned off:
    settings.SOURCE_ALLOW_HTTP_LOOPBACK = True
    source = _approved(team, "http://127.0.0.1:9/src/")
    settings.SOURCE_ALLOW_HTTP_LOOPBACK = False
    run = _refresh(source)
    assert run.status == RunStatus.FAILED and run.error_code == "insecure-url"


def test_it_refuses_private_addresses_unless_allowed(https_server, team, settings):
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    _publish(https_server, ["a"])
    source = _approved(team, https_server.base)
    run = _refresh(source)
    assert run.status == RunStatus.FAILED and run.error_code == "private-address"
    assert https_server.requests == []


def test_it_refuses_a_server_whose_certificate_it_does_not_trust(https_server, team, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE")
    _publish(https_server, ["a"])
    source = _approved(team, https_server.base)
    run = _refresh(source)
    assert run.status == RunStatus.FAILED and run.error_code == "tls-verify-failed"
    assert "SSL_CERT_FILE" in run.error and https_server.requests == []


@pytest.mark.parametrize(
    "location", ["https://user:pw@example.org/", "ftp://example.org/", "relative/dir"]
)
def test_it_refuses_bad_locations(team, location):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        source_add(actor=Actor.system(), team=team, location=location)


def test_it_allows_plain_http_to_loopback_only_when_configured(team, settings):
    import threading
    from http.server import ThreadingHTTPServer

    from tests.sources.conftest import HttpsServer, _Handler

    settings.SOURCE_ALLOW_HTTP_LOOPBACK = True
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    app = HttpsServer(port=httpd.server_address[1])
    httpd.app = app  # type: ignore[attr-defined]
    _publish(app, ["a"])
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        source = _approved(team, f"http://127.0.0.1:{app.port}/src/")
        run = _refresh(source)
        assert run.status == RunStatus.SUCCEEDED, run.error
        settings.SOURCE_ALLOW_HTTP_LOOPBACK = False
        run = _refresh(source)
        assert run.error_code == "insecure-url"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
