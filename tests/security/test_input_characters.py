"""NUL and other control characters in a path, query string or form body: a 400, never a 500.

The walk covers every URL pattern in the resolver (the admin site included): a NUL in each path
parameter in turn, a NUL in every query parameter the code reads, a NUL in a form-encoded POST,
each as an anonymous caller, a team admin's session, a superuser's session and an all-scope token.
PostgreSQL is where a NUL used to reach a query and fail (text cannot hold it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.resolvers import RoutePattern
from rest_framework.test import APIClient

from memoryadmin.models import Scope
from reviews.models import Decision

ROOT = Path(__file__).resolve().parent.parent.parent
APPS = ("memoryadmin", "sources", "reviews", "bundles", "webhooks")
JSON_PREFIXES = ("/api/", "/v1/", "/mcp")
# Every query parameter name the code reads (the test below keeps this list complete), plus
# DRF's pagination and a name nothing reads.
QUERY_NAMES = [
    "accept_foreign_embeddings",
    "action",
    "actor",
    "after",
    "assigned",
    "before",
    "confirm_dna",
    "days",
    "event",
    "export",
    "flag",
    "health",
    "include",
    "include_flagged",
    "keep_embeddings",
    "kind",
    "limit",
    "offset",
    "origin",
    "page",
    "preset",
    "propose_to",
    "q",
    "repository",
    "reviewer",
    "role",
    "scope",
    "since",
    "sort",
    "state",
    "status",
    "target",
    "team",
    "type",
    "vector",
    "was",
    "x",
    "zone",
]
CONVERTER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


def _routes(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, str | None]]:
    """(route with converters, name) for every URL pattern, admin site included."""
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _routes(entry.url_patterns, prefix + _route_text(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + _route_text(entry.pattern), entry.name


def _route_text(pattern: Any) -> str:
    if isinstance(pattern, RoutePattern):
        return str(pattern)
    # The admin's few regex routes: `^(?P<app_label>auth|memoryadmin|…)/$` and the like.
    regex = str(pattern).lstrip("^").rstrip("$").replace("\\Z", "")
    return re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", regex)


def _values(world: dict[str, Any]) -> dict[str, str]:
    ids = {k: v for k, v in world["alpha"].ids().items() if v is not None}
    values = {key: str(value) for key, value in ids.items()}
    values.update(
        pk=str(world["alpha"].source.pk),
        object_id="1",
        app_label="memoryadmin",
        content_type_id="1",
        url="x",
    )
    return values


def _fill(route: str, values: dict[str, str], poisoned: str | None = None) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group("name")
        return "a%00b" if name == poisoned else quote(values.get(name, "1"))

    return "/" + CONVERTER.sub(one, route)


def _probe_urls(world: dict[str, Any]) -> list[str]:
    values = _values(world)
    query = "&".join(f"{name}=%00" for name in QUERY_NAMES) + "&%00=1"
    urls = []
    for route, _ in _routes(get_resolver().url_patterns):
        urls.append(_fill(route, values) + "?" + query)
        for match in CONVERTER.finditer(route):
            urls.append(_fill(route, values, poisoned=match.group("name")))
        if not CONVERTER.search(route):
            urls.append("/" + route + "%00")
    return urls


def _clients(world: dict[str, Any], make_token: Any) -> dict[str, Client]:
    # A server error comes back as a 500 response rather than as the view's exception.
    admin = Client(raise_request_exception=False)
    admin.force_login(world["users"]["admin"])
    superuser = Client(raise_request_exception=False)
    superuser.force_login(world["users"]["superuser"])
    token = APIClient(raise_request_exception=False)
    every_scope = [str(scope) for scope in Scope]
    token.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(world['alpha'].team, every_scope)}")
    return {
        "anonymous": Client(raise_request_exception=False),
        "admin": admin,
        "superuser": superuser,
        "token": token,
    }


def _rolled_back(call):  # type: ignore[no-untyped-def]
    with transaction.atomic():
        response = call()
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)
        transaction.set_rollback(True)
    return response


def _refusal_problem(url: str, response: Any) -> str | None:
    """None when the response is the 400 for invalid characters, else what is wrong."""
    if response.status_code != 400:
        return f"status {response.status_code}"
    path = url.split("?", 1)[0]
    if path.startswith(JSON_PREFIXES):
        body = response.json()
        if body.get("error", {}).get("code") != "invalid-characters":
            return f"body {body}"
        if set(body["error"]) != {"code", "message", "details"}:
            return f"error keys {sorted(body['error'])}"
    elif "text/html" not in response["Content-Type"]:
        return f"content type {response['Content-Type']}"
    return None


def test_it_refuses_a_nul_anywhere_in_any_url_with_a_400(world, make_token):
    urls = _probe_urls(world)
    assert len(urls) > 150, len(urls)  # the walk found the whole site, admin included
    failures = []
    for who, client in _clients(world, make_token).items():
        for url in urls:
            response = _rolled_back(lambda: client.get(url))  # noqa: B023
            problem = _refusal_problem(url, response)
            if problem:
                failures.append((who, "GET", url, problem))
    assert not failures, "\n".join(map(str, failures[:40])) + f"\n… {len(failures)} in all"


def test_it_refuses_a_nul_in_any_form_post_with_a_400(world, make_token):
    """Url-encoded everywhere; multipart on HTML pages (an API's upload is its view's to read)."""
    values = _values(world)
    urls = sorted({_fill(route, values) for route, _ in _routes(get_resolver().url_patterns)})
    bodies = [
        {name: "\x00" for name in ("comment", "name", "username", "url", "location", "rules")},
        {"comment\x00": "fine"},
    ]
    failures = []
    for who, client in _clients(world, make_token).items():
        for url in urls:
            for body in bodies:
                encoded = _rolled_back(
                    lambda: client.post(  # noqa: B023
                        url,  # noqa: B023
                        urlencode(body),  # noqa: B023
                        content_type="application/x-www-form-urlencoded",
                    )
                )
                multipart = _rolled_back(lambda: client.post(url, body))  # noqa: B023
                problem = _refusal_problem(url, encoded)
                if problem:
                    failures.append((who, "urlencoded", url, sorted(body), problem))
                if url.startswith(JSON_PREFIXES):
                    problem = (
                        f"status {multipart.status_code}" if multipart.status_code >= 500 else None
                    )
                else:
                    problem = _refusal_problem(url, multipart)
                if problem:
                    failures.append((who, "multipart", url, sorted(body), problem))
    assert not failures, "\n".join(map(str, failures[:40])) + f"\n… {len(failures)} in all"


NAMED_CASES = [
    ("query", "/api/context/?scope=%00"),
    ("path", "/api/reviews/proposals/a%00b/"),
    ("query", "/t/alpha/audit/?action=%00"),
    ("query", "/api/context/?scope=%1B%5B31m"),  # an ANSI escape: ESC is a C0 control
    ("path", "/t/alpha/sources/%7F/"),
]


def test_it_names_where_the_invalid_character_was(world):
    client = APIClient()
    client.force_login(world["users"]["admin"])
    for where, url in NAMED_CASES:
        response = client.get(url)
        assert response.status_code == 400, url
        if url.startswith("/api/"):
            error = response.json()["error"]
            assert error["code"] == "invalid-characters", url
            assert error["details"]["where"] == where, url
        else:
            assert b"invalid character" in response.content, url


def test_it_ignores_a_session_cookie_with_a_nul_rather_than_failing(world):
    client = Client(raise_request_exception=False)
    client.cookies["sessionid"] = "abcdefgh\x00ijklmnop"
    response = client.get(reverse("team-home", kwargs={"team_slug": "alpha"}))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_it_keeps_tabs_and_newlines_in_form_text(world):
    client = Client()
    client.force_login(world["users"]["admin"])
    proposal = world["alpha"].proposal
    url = reverse("proposal-reject", kwargs={"team_slug": "alpha", "memory_pk": proposal.pk})
    response = client.post(url, {"comment": "line one\r\n\tline two"})
    assert response.status_code == 302
    assert Decision.objects.get(items__memory=proposal).comment == "line one\r\n\tline two"


def test_it_probes_every_query_parameter_the_code_reads():
    read = re.compile(
        r"""(?:GET|query_params|params)(?:\.get|\.getlist|\.pop)?[\[(]\s*["']([a-z_]+)["']"""
    )
    helper = re.compile(r"""_(?:flag|query\w*|param\w*)\(\s*request\s*,\s*["']([a-z_]+)["']""")
    found: set[str] = set()
    for app in APPS:
        for source in (ROOT / app).rglob("*.py"):
            text = source.read_text(encoding="utf-8")
            found.update(read.findall(text))
            found.update(helper.findall(text))
            for keys in re.findall(r"for k in \(([^)]*)\)", text):
                found.update(re.findall(r'"([a-z_]+)"', keys))
    assert found, "the scan found no query parameter at all"
    assert found <= set(QUERY_NAMES), sorted(found - set(QUERY_NAMES))


def test_it_probes_every_filter_of_every_list():
    """The team lists read their parameters through FilterSets (memoryadmin.listing)."""
    import importlib

    from memoryadmin.listing import ListFilterSet

    for app in APPS:
        if (ROOT / app / "filters.py").exists():
            importlib.import_module(f"{app}.filters")
    filtersets = _subclasses(ListFilterSet)
    assert len(filtersets) >= 9, filtersets
    names = {name for fs in filtersets for name in fs.base_filters} | {"export", "page"}
    assert names <= set(QUERY_NAMES), sorted(names - set(QUERY_NAMES))


def _subclasses(cls: type) -> list[type]:
    return [sub for direct in cls.__subclasses__() for sub in (direct, *_subclasses(direct))]


def test_it_reads_the_bytes_of_a_lone_surrogate_as_replacement_characters(team, admin_user):
    """%ED%A0%80 is not UTF-8: Django decodes it to U+FFFD (or keeps it escaped in a path)."""
    client = APIClient(raise_request_exception=False)
    client.force_login(admin_user)
    for url, expected in (
        ("/api/context/?team=alpha&scope=%ED%A0%80", 200),
        ("/api/reviews/proposals/%ED%A0%80/?team=alpha", 404),
        ("/t/alpha/audit/?action=%ED%A0%80", 200),
        ("/t/alpha/sources/%ED%A0%80/", 404),
    ):
        assert client.get(url).status_code == expected, url
