"""Git work in the real worker: the address guard runs there, and git has a queue of its own.

A remote saved while local remotes were allowed is refused by a worker started without the
opt-in, before git connects (a listener on 127.0.0.1 counts connections). A dripping git
remote holds the git worker while a webhook delivery, on its own queue and worker, goes out.
"""

from __future__ import annotations

import shutil

import pytest
from django.db import transaction

from memoryadmin.audit import Actor
from memoryadmin.celery import app
from reviews.models import Repository, SyncState
from reviews.services.repositories import (
    repository_create,
    repository_sync,
    repository_sync_request,
)
from tests.conftest import wait_for
from tests.faults.workers import worker
from tests.reviews.conftest import make_remote
from tests.reviews.test_http_remote import TOKEN
from tests.security.netservers import GitHttp, listening
from tests.webhooks.conftest import receiver  # noqa: F401
from webhooks import events
from webhooks.emit import event_emit
from webhooks.models import WebhookDelivery
from webhooks.services.endpoints import endpoint_create

pytestmark = pytest.mark.worker
STRICT = {
    "MEMORYADMIN_REPOSITORY_ALLOW_LOCAL_REMOTES": "false",
    "MEMORYADMIN_SOURCE_ALLOW_PRIVATE_ADDRESSES": "false",
}


@pytest.fixture
def sent_to_workers():  # type: ignore[no-untyped-def]
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = previous


def test_it_refuses_a_stored_internal_remote_in_the_worker_without_connecting(
    transactional_db, team, tmp_path, settings, sent_to_workers
):
    queue = app.conf.task_default_queue
    with listening(b"SSH-2.0-OpenSSH_9.2p1 internal\r\n") as listener:
        with worker(tmp_path, queue=queue, pool="solo", env=STRICT):
            urls = [
                f"http://127.0.0.1:{listener.port}/app.git",
                f"https://localhost:{listener.port}/app.git",
                f"ssh://git@127.0.0.1:{listener.port}/app.git",
            ]
            for index, url in enumerate(urls):
                with transaction.atomic():  # saved with the opt-in; the worker has none
                    repository_create(
                        actor=Actor.system(),
                        team=team,
                        name=f"app-{index}",
                        remote_url=url,
                        allow_local=True,
                    )
            wait_for(
                lambda: Repository.objects.filter(team=team, last_sync_ok=False).count() == 3,
                timeout=60,
            )
        errors = list(Repository.objects.values_list("last_error", flat=True))
        assert listener.connections == 0
    assert all(error.startswith("git fetch refused:") for error in errors), errors


def test_it_delivers_a_webhook_while_a_dripping_git_remote_holds_the_git_worker(
    transactional_db,
    team,
    admin_user,
    tmp_path,
    settings,
    receiver,  # noqa: F811
    sent_to_workers,
):
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    settings.SOURCE_ALLOW_HTTP_LOOPBACK = True
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = True
    queue = app.conf.task_default_queue
    remote = make_remote(tmp_path / "git")
    server = GitHttp(remote.bare.parent)
    local = {"MEMORYADMIN_REPOSITORY_ALLOW_LOCAL_REMOTES": "true", "MEMORYADMIN_GIT_TIMEOUT": "20"}
    loopback = {"MEMORYADMIN_SOURCE_ALLOW_HTTP_LOOPBACK": "true"}
    (tmp_path / "git-worker").mkdir()
    (tmp_path / "other-worker").mkdir()
    repository = None
    try:
        with transaction.atomic():
            repository = repository_create(
                actor=Actor.system(),
                team=team,
                name="slow",
                remote_url=server.url(),
                credential_kind="https-token",
                credential_secret=TOKEN,
            )
        repository = repository_sync(repository_id=repository.pk)  # the worker's copy is its own
        endpoint_create(
            actor=Actor(user=admin_user), team=team, url=receiver.url("/hook"), events=[]
        )
        others = [queue, f"{queue}.sources", f"{queue}.webhooks", f"{queue}.imports"]
        with (
            worker(
                tmp_path / "git-worker", queue=queue, pool="solo", env=local, only=[f"{queue}.git"]
            ),
            worker(tmp_path / "other-worker", queue=queue, pool="solo", env=loopback, only=others),
        ):
            server.mode = "drip"
            repository_sync_request(actor=Actor.system(), repository=repository)
            assert server.dripping.wait(60), "the git worker reached the dripping remote"
            event_emit(team=team, event=events.DECISION_MADE, data={"n": 1})
            delivery = wait_for(
                lambda: WebhookDelivery.objects.filter(state="succeeded").first(), timeout=60
            )
            state_when_delivered = Repository.objects.get(pk=repository.pk).sync_state
            wait_for(
                lambda: Repository.objects.get(pk=repository.pk).sync_state == SyncState.IDLE,
                timeout=90,
            )
        repository.refresh_from_db()
    finally:
        server.close()
        if repository is not None:
            shutil.rmtree(repository.working_dir, ignore_errors=True)
    assert delivery.state == "succeeded" and len(receiver.requests) == 1
    assert state_when_delivered == SyncState.RUNNING  # git was still stuck: nothing waited on it
    assert repository.last_error == "git fetch failed: the remote did not finish within 20 s"
