"""A form that fails validation never renders a credential back: not a secret, not a URL's userinfo.

Every HTML form with a secret field or a URL field is submitted through HTTP with a value that
fails validation, and the response must not contain the secret. A second test walks every form
class of the project, so a new secret field cannot ship with a widget that echoes.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from django import forms
from django.db import transaction
from django.test import Client
from django.urls import reverse

from memoryadmin.audit import Actor
from memoryadmin.models import Role
from sources.services.lifecycle import source_add
from tests.sources.helpers import record_text, write_source
from webhooks.services.endpoints import endpoint_create

SECRET = "s3cr3t-Echo-Value-42"
APPS = ("memoryadmin", "sources", "reviews", "bundles", "webhooks")
SECRET_FIELD = re.compile(r"secret|token|password|private|credential_(?!kind|username)")
URL_FIELD = re.compile(r"url|location|remote")


def _admin_client(make_user: Any, team: Any) -> Client:
    client = Client()
    client.force_login(make_user("alice", team=team, role=Role.ADMIN))
    return client


def _failing_posts(team: Any) -> list[tuple[str, str, dict[str, str]]]:
    """(what, url, data): each fails validation and carries SECRET where a form must not echo it."""
    slug = team.slug
    repository_add = reverse("repository-add", kwargs={"team_slug": slug})
    source_add = reverse("source-add", kwargs={"team_slug": slug})
    webhooks = reverse("webhook-list", kwargs={"team_slug": slug})
    repository = {
        "name": "",  # missing: the form fails
        "remote_url": "https://example.org/team/memory.git",
        "branch": "main",
        "credential_kind": "https-token",
        "credential_username": "x-access-token",
        "credential_secret": SECRET,
    }
    return [
        ("repository token, form error", repository_add, repository),
        (
            "repository SSH key, service error",
            repository_add,
            {
                **repository,
                "name": "memory",
                "remote_url": "ssh://git@example.org/team/memory.git",
                "credential_kind": "ssh-key",
                "credential_secret": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n",
                "ssh_known_hosts": "",  # missing for SSH: the service refuses
            },
        ),
        (
            "repository URL with a password",
            repository_add,
            {
                **repository,
                "name": "memory",
                "remote_url": f"https://x-access-token:{SECRET}@example.org/m.git",
                "credential_kind": "none",
                "credential_secret": "",
            },
        ),
        (
            "repository URL with a token as user",
            repository_add,
            {
                **repository,
                "name": "memory",
                "remote_url": f"https://{SECRET}@example.org/m.git",
                "credential_kind": "none",
                "credential_secret": "",
            },
        ),
        (
            "source bearer token",
            source_add,
            {"location": "relative/path", "credential_kind": "bearer", "token": SECRET},
        ),
        (
            "source password",
            source_add,
            {
                "location": "",
                "credential_kind": "basic",
                "username": "reader",
                "password": SECRET,
                "refresh_minutes": "60",
            },
        ),
        (
            "source URL with a password",
            source_add,
            {
                "location": f"https://reader:{SECRET}@memories.example.org/",
                "credential_kind": "none",
                "refresh_minutes": "60",
            },
        ),
        (
            "webhook URL with a password",
            webhooks,
            {"url": f"https://hook:{SECRET}@hooks.example.org/in", "description": "x"},
        ),
    ]


def test_it_never_renders_a_secret_back_when_a_form_fails(db, team, make_user):
    client = _admin_client(make_user, team)
    failures = []
    for what, url, data in _failing_posts(team):
        response = client.post(url, data)
        assert response.status_code in (200, 400), (what, response.status_code)
        body = response.content.decode()
        assert 'class="errorlist' in body or "error" in body, (what, "the form did not fail")
        if SECRET in body:
            failures.append(what)
    assert not failures, f"echoed the secret: {failures}"


def test_it_never_renders_a_secret_back_on_the_edit_forms(db, team, make_user, tmp_path):
    client = _admin_client(make_user, team)
    actor = Actor.system()
    with transaction.atomic():
        source = source_add(
            actor=actor,
            team=team,
            location=str(write_source(tmp_path / "src", {"r1": record_text("r1")})),
        )
    endpoint, _ = endpoint_create(
        actor=actor, team=team, url="https://hooks.example.org/in", events=[]
    )
    edits = [
        (
            "source credential, no user name",
            reverse("source-credential", kwargs={"team_slug": team.slug, "source_id": source.pk}),
            {"credential_kind": "basic", "username": "", "password": SECRET},
        ),
        (
            "webhook URL with a password",
            reverse("webhook-detail", kwargs={"team_slug": team.slug, "endpoint_id": endpoint.pk}),
            {"url": f"https://hook:{SECRET}@hooks.example.org/in", "description": ""},
        ),
    ]
    for what, url, data in edits:
        response = client.post(url, data)
        body = response.content.decode()
        assert response.status_code in (200, 400), (what, response.status_code)
        assert 'class="errorlist' in body, (what, "the form did not fail")
        assert SECRET not in body, what


def test_it_keeps_the_rest_of_a_failed_url_so_the_user_can_fix_it(db, team, make_user):
    client = _admin_client(make_user, team)
    response = client.post(
        reverse("repository-add", kwargs={"team_slug": team.slug}),
        {
            "name": "memory",
            "remote_url": f"https://x-access-token:{SECRET}@example.org/m.git",
            "branch": "main",
            "credential_kind": "none",
        },
    )
    body = response.content.decode()
    assert "Do not put credentials in the URL" in body
    assert 'value="https://example.org/m.git"' in body


def test_it_keeps_an_ssh_user_name_in_a_failed_url(db, team, make_user):
    client = _admin_client(make_user, team)
    response = client.post(
        reverse("repository-add", kwargs={"team_slug": team.slug}),
        {"name": "", "remote_url": "ssh://git@example.org/m.git", "credential_kind": "none"},
    )
    assert 'value="ssh://git@example.org/m.git"' in response.content.decode()


def _project_forms() -> list[type[forms.Form]]:
    for app in APPS:
        try:
            importlib.import_module(f"{app}.forms")
        except ModuleNotFoundError:
            continue
    found: list[type[forms.Form]] = []
    pending: list[type] = [forms.Form]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            pending.append(sub)
            if sub.__module__.split(".")[0] in APPS:
                found.append(sub)
    return found


def test_it_gives_every_secret_and_url_field_a_widget_that_does_not_echo():
    checked = []
    failures = []
    for form_class in _project_forms():
        for name in form_class.base_fields:
            if SECRET_FIELD.search(name):
                value = SECRET
            elif URL_FIELD.search(name):
                value = f"https://user:{SECRET}@example.org/x"
            else:
                continue
            checked.append(f"{form_class.__name__}.{name}")
            html = form_class(data={name: value})[name].as_widget()
            if SECRET in html:
                failures.append(f"{form_class.__module__}.{form_class.__name__}.{name}")
    assert len(checked) >= 7, checked  # the walk found the credential and URL fields
    assert not failures, failures
