"""CSRF on every form and session API write; session and CSRF cookie flags."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from tests.conftest import ROOT
from tests.security.test_access_matrix import APIS, PAGES, _api_call, _api_url, _kwargs


def test_it_refuses_every_form_post_without_a_csrf_token(world):
    alpha = world["alpha"]
    failures = []
    for role in ("admin", "superuser"):
        client = Client(enforce_csrf_checks=True)
        client.force_login(world["users"][role])
        for page in PAGES:
            if page.post is None:
                continue
            url = reverse(page.name, kwargs=_kwargs(page.name, alpha))
            response = client.post(url, page.data)
            if response.status_code != 403:
                failures.append((page.name, role, response.status_code))
    assert not failures, failures


def test_it_refuses_session_api_writes_without_a_csrf_token(world):
    alpha = world["alpha"]
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(world["users"]["admin"])
    failures = []
    for api in APIS:
        if api.method == "GET":
            continue
        response = _api_call(client, api, _api_url(api, alpha), alpha, "?team=alpha")
        if response.status_code != 403:
            failures.append((api.name, response.status_code))
    assert not failures, failures


def test_it_sets_httponly_samesite_session_cookies(db, make_user):
    make_user("carol")
    client = Client(enforce_csrf_checks=True)
    page = client.get(reverse("login"))
    token = page.cookies["csrftoken"].value
    response = client.post(
        reverse("login"),
        {"username": "carol", "password": "pw-carol", "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    session = response.cookies["sessionid"]
    assert session["httponly"] is True
    assert session["samesite"] == "Lax"
    assert page.cookies["csrftoken"]["samesite"] == "Lax"


def test_it_marks_cookies_secure_in_production_settings(tmp_path):
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("MEMORYADMIN_") and key != "DJANGO_SETTINGS_MODULE"
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "memoryadmin.settings",
            "MEMORYADMIN_DEBUG": "false",
            "MEMORYADMIN_SECRET_KEY": "prod-" + "k" * 50,
            "MEMORYADMIN_ALLOWED_HOSTS": "memory.example.org",
            "MEMORYADMIN_DATA_DIR": str(tmp_path),
        }
    )
    code = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        "print(json.dumps([s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
        "s.SESSION_COOKIE_HTTPONLY, s.SESSION_COOKIE_SAMESITE, s.SECURE_SSL_REDIRECT, "
        "s.SECURE_HSTS_SECONDS > 0]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [
        True,
        True,
        True,
        "Lax",
        True,
        True,
    ]


def test_it_refuses_the_account_forms_of_the_admin_without_a_csrf_token(db, make_user):
    """Django's user and group admin stay editable (and audited): their forms need the token."""
    from django.contrib.auth.models import Group

    from memoryadmin.models import AuditEvent

    root = make_user("root", is_superuser=True, is_staff=True)
    bob = make_user("bob")
    group = Group.objects.create(name="operators")
    client = Client(enforce_csrf_checks=True)
    client.force_login(root)
    posts = {
        "/admin/auth/user/add/": {"username": "eve", "usable_password": "false"},
        f"/admin/auth/user/{bob.pk}/change/": {"username": "bob", "is_superuser": "on"},
        f"/admin/auth/user/{bob.pk}/password/": {"usable_password": "false"},
        f"/admin/auth/user/{bob.pk}/delete/": {"post": "yes"},
        "/admin/auth/user/": {
            "action": "delete_selected",
            "post": "yes",
            "_selected_action": [str(bob.pk)],
        },
        "/admin/auth/group/add/": {"name": "admins"},
        f"/admin/auth/group/{group.pk}/change/": {"name": "renamed"},
        f"/admin/auth/group/{group.pk}/delete/": {"post": "yes"},
    }
    before = AuditEvent.objects.count()
    for url, data in posts.items():
        assert client.post(url, data).status_code == 403, url
    bob.refresh_from_db()
    assert not bob.is_superuser and bob.has_usable_password()
    assert Group.objects.filter(name="operators").exists()
    assert AuditEvent.objects.count() == before
