"""Known secrets go through every flow, then nothing the server shows, logs or stores holds them.

The four secrets: an API token, a source bearer credential, a repository HTTPS token, and a
webhook signing secret. Each flow uses them for real (a TLS source server that checks the
bearer, a `git http-backend` that checks the token, a webhook receiver that checks the
signature), including failures whose error text could echo them.
"""

from __future__ import annotations

import base64
import io
import json
import logging
from typing import Any

from django.apps import apps
from django.db import models, transaction
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent, Role, Scope
from reviews.models import Memory, PushState
from reviews.services.decisions import proposal_approve
from reviews.services.repositories import repository_create, repository_sync
from sources.fetchers import Credential
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh
from tests.reviews.test_http_remote import TOKEN as REPO_TOKEN
from tests.security.test_access_matrix import PAGES, _kwargs
from tests.security.world import build_team
from tests.sources.helpers import manifest_text, record_text
from tests.webhooks.conftest import Reply
from webhooks.services.endpoints import endpoint_ping

SOURCE_TOKEN = "srcbearer-9f8e7d6c5b4a"
WRONG_REPO_TOKEN = "wrongrepo-0a1b2c3d4e5f"


def _variants(secret: str) -> list[str]:
    """The clear value and the encodings it travels in."""
    return [
        secret,
        base64.b64encode(f"x-access-token:{secret}".encode()).decode(),
        base64.b64encode(secret.encode()).decode().rstrip("="),
    ]


def _db_text() -> str:
    """Every text-like column of every row in the database, as one string."""
    kinds = (models.CharField, models.TextField, models.JSONField, models.BinaryField)
    parts: list[str] = []
    for model in apps.get_models():
        names = [f.attname for f in model._meta.concrete_fields if isinstance(f, kinds)]
        if not names:
            continue
        for row in model._default_manager.all().values_list(*names):
            for value in row:
                if isinstance(value, bytes | memoryview):
                    parts.append(bytes(value).decode("latin-1"))
                else:
                    parts.append(value if isinstance(value, str) else json.dumps(value))
    return "\n".join(parts)


def test_it_never_shows_logs_or_stores_a_secret_in_clear(
    team,
    make_user,
    tmp_path,
    settings,
    caplog,
    https_server,
    http_remote,
    receiver,
    django_capture_on_commit_callbacks,
):
    caplog.set_level(logging.DEBUG)
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    settings.SOURCE_ALLOW_HTTP_LOOPBACK = True
    settings.SOURCE_ALLOW_PRIVATE_ADDRESSES = True
    admin = make_user("alice", team=team, role=Role.ADMIN)
    reviewer = make_user("rita", team=team, role=Role.REVIEWER)
    actor = Actor(user=admin)
    collected: list[str] = []

    # The world: one of every object, a webhook to the live receiver.
    objects = build_team(team, admin, tmp_path, label="alpha", webhook_url=receiver.url())
    hook_secret = objects.secrets["webhook"]
    api_token = objects.secrets["token"]

    # 1. Source with a bearer credential: success, then 401 (denied), then the form echo.
    def bearer_only(handler):  # type: ignore[no-untyped-def]
        if handler.headers.get("Authorization") != f"Bearer {SOURCE_TOKEN}":
            return (401, {}, f"denied, you sent {handler.headers.get('Authorization')}".encode())
        return (200, {}, manifest_text(["s1"], name="Secret source").encode())

    https_server.routes["/src/memories.json"] = bearer_only
    https_server.serve("records/s1.md", record_text("s1"))
    with django_capture_on_commit_callbacks(execute=True):
        source = source_add(
            actor=actor,
            team=team,
            location=https_server.base,
            credential=Credential(kind="bearer", token=SOURCE_TOKEN),
        )
    source_approve(actor=actor, source=source)
    ok_run = source_refresh(source_id=source.pk)
    assert ok_run.status == "succeeded", ok_run.error
    assert any(h.get("Authorization") == f"Bearer {SOURCE_TOKEN}" for _, h in https_server.requests)
    https_server.routes["/src/memories.json"] = (401, {}, f"echo {SOURCE_TOKEN}".encode())
    denied_run = source_refresh(source_id=source.pk)
    assert denied_run.status == "denied"

    browser = Client()
    browser.force_login(admin)
    form = browser.post(
        reverse("source-add", kwargs={"team_slug": team.slug}),
        {"location": "ftp://nope", "credential_kind": "bearer", "token": SOURCE_TOKEN},
    )
    collected.append(form.content.decode())

    # 2. Repository over HTTP with the right token (sync + approve + push) and a wrong one.
    url, _ = http_remote
    with transaction.atomic():
        repository = repository_create(
            actor=actor,
            team=team,
            name="http",
            remote_url=url,
            credential_kind="https-token",
            credential_secret=REPO_TOKEN,
            allow_local=True,
        )
    repository = repository_sync(repository_id=repository.pk)
    assert repository.last_sync_ok, repository.last_error
    memory = Memory.objects.get(repository=repository, memory_id="20260203-cache-attempt")
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_approve(actor=Actor(user=reviewer), memory=memory)
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED, decision.state_detail
    with transaction.atomic():
        wrong = repository_create(
            actor=actor,
            team=team,
            name="wrong",
            remote_url=url,
            credential_kind="https-token",
            credential_secret=WRONG_REPO_TOKEN,
            allow_local=True,
        )
    wrong = repository_sync(repository_id=wrong.pk)
    assert not wrong.last_sync_ok
    collected.append((repository.working_dir / ".git" / "config").read_text())

    # 3. Webhook: a delivery signed with the secret; the receiver echoes it back in its body.
    receiver.plan = [Reply(status=500, body=f"bad secret {hook_secret}".encode())]
    with django_capture_on_commit_callbacks(execute=True):
        endpoint_ping(actor=actor, endpoint=objects.endpoint)
    assert receiver.requests, "the webhook was never delivered"
    for request in receiver.requests:
        collected.append(json.dumps(request.headers) + request.body.decode())

    # 4. The API with the token (every read endpoint, exports, an import) and a mangled token.
    everything = APIClient()
    everything.credentials(HTTP_AUTHORIZATION=f"Bearer {api_token}")
    objects.token.scopes = [str(s) for s in Scope]
    objects.token.save(update_fields=["scopes"])
    for name in ("api-me", "api-source-list", "api-context", "api-repository-list"):
        collected.append(everything.get(reverse(name)).content.decode())
    collected.append(everything.get(reverse("api-proposal-list")).content.decode())
    for name in ("bundle-export", "bundle-export-stream"):
        response = everything.post(reverse(name), {"scope": "full"}, format="json")
        content = (
            b"".join(response.streaming_content)
            if hasattr(response, "streaming_content")
            else response.content
        )
        collected.append(content.decode())
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION=f"Bearer {api_token}x")
    collected.append(bad.get(reverse("api-me")).content.decode())
    upload = io.BytesIO(b'{"format": "memoryai-bundle", "version": 1, "oops": ' + b"}")
    upload.name = "broken.json"
    collected.append(
        everything.post(
            reverse("bundle-import-file"), {"file": upload}, format="multipart"
        ).content.decode()
    )

    # 5. Every page an admin can GET, with this team's ids, and the brain export page.
    superuser = make_user("root", is_superuser=True, is_staff=True)
    su = Client()
    su.force_login(superuser)
    ids: dict[str, Any] = objects.ids()
    ids["source_id"] = source.pk
    for page in PAGES:
        if page.get is None:
            continue
        kwargs = _kwargs(page.name, objects)
        if "source_id" in kwargs:
            kwargs["source_id"] = source.pk
            kwargs.pop("run_id", None)
            if page.name == "source-run-status":
                kwargs["run_id"] = denied_run.pk
        if "repository_pk" in kwargs:
            kwargs["repository_pk"] = wrong.pk
        collected.append(browser.get(reverse(page.name, kwargs=kwargs)).content.decode())
    export = browser.post(
        reverse("brain-export", kwargs={"team_slug": team.slug}), {"scope": "full"}
    )
    collected.append(
        (b"".join(export.streaming_content) if export.streaming else export.content).decode()
    )
    for path in (
        "/admin/sources/source/",
        f"/admin/sources/source/{source.pk}/change/",
        "/admin/reviews/repository/",
        f"/admin/reviews/repository/{repository.pk}/change/",
        "/admin/memoryadmin/apitoken/",
        "/admin/webhooks/webhookendpoint/",
        f"/admin/webhooks/webhookendpoint/{objects.endpoint.pk}/change/",
        "/admin/memoryadmin/auditevent/",
    ):
        response = su.get(path)
        if response.status_code == 200:
            collected.append(response.content.decode())

    # 6. Audit events, logs, the database.
    collected.append(json.dumps(list(AuditEvent.objects.values("summary", "data"))))
    collected.append("\n".join(r.getMessage() for r in caplog.records))
    collected.append(caplog.text)
    collected.append(_db_text())

    haystack = "\n".join(collected)
    for label, secret in {
        "api token": api_token,
        "source bearer": SOURCE_TOKEN,
        "repository token": REPO_TOKEN,
        "wrong repository token": WRONG_REPO_TOKEN,
        "webhook secret": hook_secret,
    }.items():
        for variant in _variants(secret):
            assert variant not in haystack, f"the {label} leaked ({variant[:6]}…)"
