"""SSRF through git: repository remotes pass the same address guard as sources and webhooks.

Every spelling of an internal address is refused when the remote is saved (the HTML form and
the service) and again right before every fetch and push, with a live listener on 127.0.0.1
that must see no connection; git follows no redirect; a failed connection leaves one generic
error whatever answered; a dripping remote is cut off at the deadline.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent
from reviews.git import GitError
from reviews.gitenv import CONNECT_FAILED
from reviews.models import PushState, Repository
from reviews.services.decisions import proposal_approve
from reviews.services.push import repository_push_pending
from reviews.services.repositories import repository_create, repository_sync
from tests.reviews.conftest import make_remote
from tests.reviews.test_http_remote import TOKEN
from tests.reviews.test_workflow import ATTEMPT, proposal
from tests.security.netservers import GitHttp, Listener, closed_port, listening

INTERNAL_REMOTES = [
    "https://127.0.0.1:{port}/team/app.git",
    "https://localhost:{port}/app.git",
    "https://[::1]:{port}/app.git",
    "https://2130706433:{port}/app.git",  # 127.0.0.1 as one decimal number
    "https://127.1:{port}/app.git",
    "https://0.0.0.0:{port}/app.git",
    "https://0x7f000001:{port}/app.git",
    "https://0177.0.0.1:{port}/app.git",
    "https://127.0.0.1.:{port}/app.git",
    "https://[::ffff:127.0.0.1]:{port}/app.git",
    "https://[2002:7f00:1::]:{port}/app.git",  # 6to4 around 127.0.0.1
    "https://169.254.169.254/latest/meta-data",
    "https://10.0.0.1/app.git",
    "ssh://127.0.0.1:{port}/app.git",
    "ssh://git@[::1]:{port}/app.git",
    "ssh://git@2130706433:{port}/app.git",
    "git@127.0.0.1:app.git",
    "git@localhost:app.git",
    "git@127.1:app.git",
    "http://127.0.0.1:{port}/app.git",
    "file:///etc",
    "/srv/git/app.git",
]
REFUSAL_CODES = {"address-not-public", "remote-invalid", "remote-scheme"}


@pytest.fixture
def strict(settings) -> None:
    """Production's defaults: no local remotes, no private addresses."""
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = False
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = False


@pytest.fixture
def data_dir(settings, tmp_path) -> Path:
    """Working copies under the test's folder; local remotes allowed unless a test turns it off."""
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    return settings.DATA_DIR


@pytest.fixture
def listener() -> Iterator[Listener]:
    with listening(b"SSH-2.0-OpenSSH_9.2p1 internal\r\n") as server:
        yield server


@pytest.fixture
def git_http(tmp_path) -> Iterator[tuple[GitHttp, object]]:
    remote = make_remote(tmp_path / "git")
    server = GitHttp(remote.bare.parent)
    try:
        yield server, remote
    finally:
        server.close()


def _create(team, url: str, **extra):  # type: ignore[no-untyped-def]
    with transaction.atomic():
        return repository_create(
            actor=Actor.system(), team=team, name=extra.pop("name", "app"), remote_url=url, **extra
        )


@pytest.mark.parametrize("template", INTERNAL_REMOTES)
def test_it_refuses_an_internal_remote_on_the_add_form(
    client, team, admin_user, strict, listener, template
):
    client.force_login(admin_user)
    url = template.format(port=listener.port)
    response = client.post(
        reverse("repository-add", kwargs={"team_slug": team.slug}),
        {"name": "app", "remote_url": url, "branch": "main", "credential_kind": "none"},
    )
    assert response.status_code == 400, response.status_code
    page = response.content.decode()
    reasons = ("refused", "not valid", "Use an https://", "dotted form")
    assert any(reason in page for reason in reasons), page
    assert not Repository.objects.filter(team=team).exists()
    assert not AuditEvent.objects.filter(action="repository.create").exists()
    assert listener.connections == 0


@pytest.mark.parametrize("template", INTERNAL_REMOTES)
def test_it_refuses_an_internal_remote_in_the_service_with_a_code(team, strict, listener, template):
    with pytest.raises(ValidationError) as refused:
        _create(team, template.format(port=listener.port))
    (error,) = refused.value.error_dict["remote_url"]
    assert error.code in REFUSAL_CODES, (error.code, error.message)
    assert listener.connections == 0


def test_it_still_accepts_a_remote_on_a_public_address(team, strict):
    # Numeric public addresses need no DNS; nothing connects at save time.
    public = [
        "https://140.82.121.4/a.git",
        "ssh://git@140.82.121.4:2222/a.git",
        "git@140.82.121.4:a",
    ]
    for index, url in enumerate(public):
        assert _create(team, url, name=f"r{index}").remote_url == url


def test_it_keeps_the_opt_ins_for_private_and_local_remotes(team, settings, listener):
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = False
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = True
    _create(team, f"https://127.0.0.1:{listener.port}/app.git", name="private")
    with pytest.raises(ValidationError):  # file:// needs local remotes, not private addresses
        _create(team, "file:///srv/app.git", name="file")
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    _create(team, "file:///srv/app.git", name="file")
    _create(team, f"http://localhost:{listener.port}/app.git", name="http")
    assert listener.connections == 0


@pytest.mark.parametrize(
    "template",
    [
        "http://127.0.0.1:{port}/app.git",
        "http://localhost:{port}/app.git",
        "https://127.0.0.1:{port}/app.git",
        "https://localhost:{port}/app.git",
        "ssh://git@127.0.0.1:{port}/app.git",
    ],
)
def test_it_refuses_a_stored_remote_before_fetching_once_the_opt_in_is_off(
    team, settings, data_dir, listener, template
):
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True  # saved while local remotes were allowed
    repository = _create(team, template.format(port=listener.port))
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = False
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    repository = repository_sync(repository_id=repository.pk)
    assert repository.last_sync_ok is False
    assert repository.last_error.startswith("git fetch refused:"), repository.last_error
    if "localhost" in template:  # the message names no resolved address
        assert "127.0.0.1" not in repository.last_error and "::1" not in repository.last_error
    assert listener.connections == 0


def test_it_refuses_a_stored_remote_before_pushing_once_the_opt_in_is_off(
    team, settings, reviewer_user, data_dir, git_http
):
    server, remote = git_http
    repository = _create(team, server.url(), credential_kind="https-token", credential_secret=TOKEN)
    repository = repository_sync(repository_id=repository.pk)
    assert repository.last_sync_ok is True, repository.last_error
    memory = proposal(repository, ATTEMPT)
    decision = proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
    seen = len(server.requests)
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = False
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    repository_push_pending(repository_id=repository.pk)
    decision.refresh_from_db()
    assert decision.state == PushState.FAILED
    # a decision's first try pushes onto the head the copy knows, without fetching first: the
    # guard refuses that push, the first network command, before git runs
    assert decision.state_detail.startswith("git push refused:"), decision.state_detail
    assert len(server.requests) == seen  # the worker never reached the server again
    assert not remote.log("%s")[0].startswith("Approve")


def test_it_does_not_follow_a_redirect_from_the_remote(team, data_dir, git_http):
    server, _ = git_http
    redirector = GitHttp(Path("/nonexistent"))
    try:
        redirector.mode = "redirect"
        redirector.redirect_to = f"http://127.0.0.1:{server.port}"
        repository = _create(
            team, redirector.url(), credential_kind="https-token", credential_secret=TOKEN
        )
        repository = repository_sync(repository_id=repository.pk)
    finally:
        redirector.close()
    assert redirector.requests, "git asked the redirecting server"
    assert server.requests == []  # and did not go where it pointed
    assert repository.last_sync_ok is False
    assert "redirect" in repository.last_error and TOKEN not in repository.last_error


def test_it_tells_no_internal_service_from_another_in_the_stored_error(team, settings, data_dir):
    """With private addresses allowed, what answered on a port still cannot be read back."""
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = False
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = True
    replies = {
        "banner": b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n",
        "http": b"HTTP/1.0 400 Bad Request\r\nServer: internal-admin/1.0\r\n\r\nnope\n",
        "redis": b"-ERR wrong number of arguments for 'get' command\r\n",
        "silent": b"",
    }
    errors = {}
    with (
        listening(replies["banner"]) as banner,
        listening(replies["http"]) as http,
        listening(replies["redis"]) as redis,
        listening(replies["silent"]) as silent,
    ):
        ports = {
            "closed": closed_port(),
            "banner": banner.port,
            "http": http.port,
            "redis": redis.port,
            "silent": silent.port,
        }
        for kind, port in ports.items():
            for scheme in ("https", "ssh"):
                url = f"{scheme}://127.0.0.1:{port}/app.git"
                repository = _create(team, url, name=f"{kind}-{scheme}")
                repository = repository_sync(repository_id=repository.pk)
                errors[(kind, scheme)] = repository.last_error
    assert set(errors.values()) == {f"git fetch failed: {CONNECT_FAILED}"}, errors


def test_it_cuts_a_dripping_remote_off_at_the_deadline(
    team, settings, reviewer_user, data_dir, git_http
):
    settings.GIT_TIMEOUT = 2
    server, _ = git_http
    repository = _create(team, server.url(), credential_kind="https-token", credential_secret=TOKEN)
    repository = repository_sync(repository_id=repository.pk)
    assert repository.last_sync_ok is True, repository.last_error
    memory = proposal(repository, ATTEMPT)
    decision = proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
    server.mode = "drip"
    repository = repository_sync(repository_id=repository.pk)
    assert repository.last_error == "git fetch failed: the remote did not finish within 2 s"
    with pytest.raises(GitError) as failed:  # the push task retries a transient failure
        repository_push_pending(repository_id=repository.pk)
    assert failed.value.transient is True and failed.value.kind == "timeout"
    decision.refresh_from_db()
    assert decision.state == PushState.PENDING
    assert decision.state_detail == (  # the first try pushes onto the known head, unfetched
        "retrying: git push failed: the remote did not finish within 2 s"
    )
    assert server.client_gave_up.wait(10)  # git and its helper were killed, the socket closed


def test_it_fetches_and_pushes_through_a_named_remote_pinned_to_its_checked_address(
    team, settings, reviewer_user, data_dir, git_http
):
    """`localhost` is a name: git gets the checked addresses (curloptResolve), and works."""
    server, remote = git_http
    url = f"http://localhost:{server.port}/remote.git"
    repository = _create(team, url, credential_kind="https-token", credential_secret=TOKEN)
    repository = repository_sync(repository_id=repository.pk)
    assert repository.last_sync_ok is True, repository.last_error
    memory = proposal(repository, ATTEMPT)
    decision = proposal_approve(actor=Actor(user=reviewer_user), memory=memory)
    repository_push_pending(repository_id=repository.pk)
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED, decision.state_detail
    assert remote.log("%s")[0].startswith(f"Approve {memory.ref}")


def test_it_connects_ssh_to_the_checked_address_of_a_named_remote(team, settings, data_dir):
    """ssh gets HostName=<checked IPv4 address> for `localhost`: the listener on 127.0.0.1 is
    reached (and fails as a git server would not), with the one generic error."""
    with listening(b"SSH-2.0-OpenSSH_9.2p1 internal\r\n") as listener:
        repository = _create(team, f"ssh://git@localhost:{listener.port}/app.git")
        repository = repository_sync(repository_id=repository.pk)
    assert listener.connections == 1
    assert repository.last_error == f"git fetch failed: {CONNECT_FAILED}"
