"""HTTPS sources connect to the address that passed the SSRF check and verify the certificate
for the name. Real TLS server on loopback (test CA); only the resolver function is replaced,
because no DNS server exists here (`fake_dns`): the HTTP client's own lookups go through it too,
so a second lookup of the name would be seen and would get the second answer."""

from __future__ import annotations

from memoryadmin.audit import Actor
from sources.models import RefreshRun, RunStatus, Source
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from tests.sources.helpers import manifest_text, record_text


def _publish(server, ids: list[str]) -> None:  # type: ignore[no-untyped-def]
    server.serve("memories.json", manifest_text(ids, name="Named"))
    for record_id in ids:
        server.serve(f"records/{record_id}.md", record_text(record_id))


def _refresh(team, url: str) -> tuple[Source, RefreshRun]:  # type: ignore[no-untyped-def]
    source = source_add(actor=Actor.system(), team=team, location=url)
    source_approve(actor=Actor.system(), source=source)
    run = source_refresh(source_id=source.pk)
    source.refresh_from_db()
    return source, run


def test_it_verifies_the_certificate_for_the_name_it_pinned_to_loopback(
    named_https_server, fake_dns, team, settings
):
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = True
    fake_dns.add("memories.test", ["127.0.0.1"])
    _publish(named_https_server, ["a", "b"])
    source, run = _refresh(team, f"https://memories.test:{named_https_server.port}/src/")
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert source.display_name == "Named"
    hosts = {headers["Host"] for _, headers in named_https_server.requests}
    assert hosts == {f"memories.test:{named_https_server.port}"}


def test_it_refuses_the_certificate_of_a_name_it_does_not_cover(
    named_https_server, fake_dns, team, settings
):
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = True
    fake_dns.add("other.test", ["127.0.0.1"])
    _publish(named_https_server, ["a"])
    _, by_other_name = _refresh(team, f"https://other.test:{named_https_server.port}/src/")
    _, by_address = _refresh(team, f"https://127.0.0.1:{named_https_server.port}/src/")
    for run in (by_other_name, by_address):
        assert run.status == RunStatus.FAILED and run.error_code == "tls-verify-failed", run.error
        assert "could not be verified" in run.error and "SSL_CERT_FILE" in run.error
    assert named_https_server.requests == []


def test_it_keeps_connecting_to_the_checked_address_when_the_name_changes_after_the_check(
    named_https_server, fake_dns, team, settings
):
    """The first answer is checked; every later one is 127.0.0.2, where nothing listens. A client
    that looked the name up again (manifest, records, redirect hops) would fail to connect."""
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = True
    fake_dns.add("memories.test", ["127.0.0.1"], ["127.0.0.2"])
    _publish(named_https_server, ["a", "b"])
    named_https_server.routes["/old/memories.json"] = (301, {"Location": "/src/memories.json"}, b"")
    for record_id in ("a", "b"):
        named_https_server.routes[f"/old/records/{record_id}.md"] = (
            302,
            {"Location": f"/src/records/{record_id}.md"},
            b"",
        )
    _, run = _refresh(team, f"https://memories.test:{named_https_server.port}/old/")
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.record_count == 2
    assert [path for path, _ in named_https_server.requests] == [
        "/old/memories.json",
        "/src/memories.json",
        "/old/records/a.md",
        "/src/records/a.md",
        "/old/records/b.md",
        "/src/records/b.md",
    ]
    assert fake_dns.count("memories.test") == 1


def test_it_never_reaches_the_internal_address_a_name_rebinds_to(
    https_server, fake_dns, team, settings
):
    """Rebinding: the check sees a public address, the next answer is this server's loopback.
    The connection goes to the public address (refused or unreachable here), never to us."""
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    settings.SOURCE_HTTP_TIMEOUT = 2
    fake_dns.add("rebind.test", ["93.184.216.34"], ["127.0.0.1"])
    _publish(https_server, ["a"])
    _, run = _refresh(team, f"https://rebind.test:{https_server.port}/src/")
    assert run.status == RunStatus.FAILED
    assert run.error_code in ("unreachable", "timeout"), run.error
    assert https_server.requests == []
    assert fake_dns.count("rebind.test") == 1


def test_it_refuses_a_name_with_any_non_public_address(https_server, fake_dns, team, settings):
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    fake_dns.add("mixed.test", ["93.184.216.34", "127.0.0.1"])
    _publish(https_server, ["a"])
    _, run = _refresh(team, f"https://mixed.test:{https_server.port}/src/")
    assert run.status == RunStatus.FAILED and run.error_code == "private-address", run.error
    assert "127.0.0.1" in run.error
    assert https_server.requests == []


def test_it_tries_the_next_checked_address_when_one_refuses_the_connection(
    named_https_server, fake_dns, team, settings
):
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = True
    fake_dns.add("memories.test", ["127.0.0.2", "127.0.0.1"], ["127.0.0.2"])
    _publish(named_https_server, ["a", "b"])
    _, run = _refresh(team, f"https://memories.test:{named_https_server.port}/src/")
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert named_https_server.count("memories.json") == 1
    assert fake_dns.count("memories.test") == 1


def test_it_reports_a_name_that_does_not_resolve(team, settings):
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = True
    _, run = _refresh(team, "https://no-such-host.invalid/src/")
    assert run.status == RunStatus.FAILED and run.error_code == "unreachable", run.error
    assert "no-such-host.invalid" in run.error
