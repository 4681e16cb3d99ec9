"""Every URL pattern by every role and token scope, and every detail URL with the other team's ids.

The tables below are the access policy. A URL pattern that is not in a table fails
`test_it_covers_every_url_pattern`, so a new view cannot ship without a row here.
Each request runs in a savepoint that is rolled back, so every row sees the same world.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.contrib import admin
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from memoryadmin.models import Scope
from tests.bundles.helpers import chunk, make_bundle

ROLES = ("anonymous", "viewer", "reviewer", "other_admin", "admin", "superuser")
VIEW, REVIEW, MANAGE, PUBLIC, LOGIN = "view", "review", "manage", "public", "login"


def expected_for(level: str, ok: int | tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """The status each role gets from a team page guarded by @team_view(level)."""
    ok_t = ok if isinstance(ok, tuple) else (ok,)
    if level == PUBLIC:
        return dict.fromkeys(ROLES, ok_t)
    if level == LOGIN:
        return {role: (302,) if role == "anonymous" else ok_t for role in ROLES}
    allowed = {
        VIEW: {"viewer", "reviewer", "admin", "superuser"},
        REVIEW: {"reviewer", "admin", "superuser"},
        MANAGE: {"admin", "superuser"},
    }[level]
    result: dict[str, tuple[int, ...]] = {"anonymous": (302,), "other_admin": (404,)}
    for role in ("viewer", "reviewer", "admin", "superuser"):
        result[role] = ok_t if role in allowed else (403,)
    return result


@dataclass(frozen=True)
class Page:
    """An HTML route: methods it answers, with the permission level and the allowed status."""

    name: str
    level: str
    get: int | tuple[int, ...] | None = 200  # None: POST only (GET → 405 for everyone)
    post: int | tuple[int, ...] | None = None  # None: GET only
    data: dict[str, Any] = field(default_factory=dict)
    idor: bool = True  # has object ids to swap for the other team's


PAGES = [
    Page("home", LOGIN, get=(200, 302), idor=False),  # one team: redirect to it
    Page("healthz", PUBLIC, get=(200, 503), idor=False),
    Page("readyz", PUBLIC, get=(200, 503), idor=False),
    Page("login", PUBLIC, get=200, idor=False),
    Page("logout", PUBLIC, get=None, post=(200, 302), idor=False),
    Page("team-home", VIEW, idor=False),
    Page("token-list", MANAGE, post=200, data={"name": ""}, idor=False),
    Page("token-revoke", MANAGE, post=302),
    Page("team-audit", MANAGE, idor=False),
    Page("team-usage", VIEW, idor=False),
    Page("member-list", MANAGE, post=400, data={"username": ""}, idor=False),
    Page("member-change", MANAGE, get=None, post=302, data={"role": "admin"}),
    # the world's membership is its admin's: removing the last admin is refused (409)
    Page("member-remove", MANAGE, post=(302, 409)),
    Page("invitation-list", MANAGE, post=400, data={"email": ""}, idor=False),
    Page("invitation-revoke", MANAGE, get=None, post=302),
    # the link is the credential: anyone holding it sees the page; a member's join is refused
    Page("invitation-accept", PUBLIC, get=200, post=(302, 400), idor=False),
    Page("source-list", VIEW, idor=False),
    Page("source-add", MANAGE, post=200, data={"location": ""}, idor=False),
    Page("source-detail", VIEW),
    Page("source-approve", MANAGE, get=None, post=302),
    Page("source-edit", MANAGE, post=400, data={"refresh_minutes": ""}),
    Page("source-disable", MANAGE, post=302),
    Page("source-refresh", MANAGE, get=None, post=302),
    Page("source-credential", MANAGE, get=None, post=302, data={"credential_kind": "none"}),
    Page("source-credential-clear", MANAGE, post=302),
    Page("source-delete", MANAGE, post=302),
    Page("source-run-status", VIEW),
    Page("review-queue", VIEW, idor=False),
    # a refused batch (no proposals chosen) comes back as the queue, selection kept: 400
    Page("review-batch", REVIEW, get=None, post=400, data={"action": "reject"}, idor=False),
    Page("review-history", VIEW, idor=False),
    Page("review-settings", MANAGE, post=(200, 302), idor=False),
    Page("decision-detail", VIEW),
    Page("decision-retry", REVIEW, get=None, post=302),
    Page("decision-allow-reproposal", REVIEW, get=None, post=302),
    Page("proposal-detail", VIEW),
    Page("proposal-decisions", VIEW),
    # the world's proposal has nothing masked: refused with its reason (400), after the role check
    Page("proposal-reveal", REVIEW, get=None, post=400, data={"reason": "matrix"}),
    Page("proposal-approve", REVIEW, get=None, post=302),
    Page("proposal-reject", REVIEW, get=None, post=302, data={"comment": "no"}),
    Page("repository-list", VIEW, idor=False),
    Page("repository-add", MANAGE, post=400, data={"name": ""}, idor=False),
    Page("repository-detail", VIEW),
    Page("repository-edit", MANAGE, post=400, data={"name": ""}),
    Page("repository-disable", MANAGE, post=302),
    Page("repository-enable", MANAGE, get=None, post=302),
    Page("repository-delete", MANAGE, post=302),
    Page("repository-sync", MANAGE, get=None, post=302),
    Page("repository-sync-status", VIEW),
    Page("repository-routing", MANAGE, get=None, post=(200, 302)),
    Page("brain", VIEW, idor=False),
    Page("brain-export", VIEW, get=None, post=200, data={"scope": "full"}, idor=False),
    Page("brain-import", MANAGE, get=None, post=(200, 302, 400), idor=False),
    Page("brain-job", VIEW),
    Page("brain-chunk-delete", MANAGE, post=302),
    Page("brain-import-undo", MANAGE, post=302),
    Page("webhook-list", MANAGE, post=200, data={"url": ""}, idor=False),
    Page("webhook-detail", MANAGE),
    Page("webhook-active", MANAGE, get=None, post=302, data={"active": "false"}),
    Page("webhook-rotate", MANAGE, post=200),
    Page("webhook-delete", MANAGE, post=302),
    Page("webhook-ping", MANAGE, get=None, post=302),
    # the world's endpoint has no overlap: both say so and go back to the endpoint
    Page("webhook-end-overlap", MANAGE, get=302, post=302),
    Page("webhook-redeliver", MANAGE, get=None, post=302),
]


@dataclass(frozen=True)
class Api:
    """An API route: method, required scope (None: open to any caller), allowed status."""

    name: str
    method: str
    scope: str | None
    ok: int | tuple[int, ...] = 200
    body: Any = None
    fmt: str = "json"
    pk: str | None = None  # which object's pk fills <pk>
    public: bool = False


def _bundle() -> dict[str, Any]:
    return make_bundle(chunks=[chunk(1, "matrix import")])


APIS = [
    Api("api-me", "GET", None),
    Api("api-token-list", "GET", Scope.TEAM_MANAGE),
    # a token grants only scopes it holds: the matrix token holds team:manage alone
    Api(
        "api-token-list",
        "POST",
        Scope.TEAM_MANAGE,
        ok=201,
        body={"name": "matrix", "scopes": ["team:manage"]},
    ),
    Api("api-token-detail", "DELETE", Scope.TEAM_MANAGE),
    Api("api-source-list", "GET", Scope.SOURCES_READ),
    Api("api-source-list", "POST", Scope.SOURCES_MANAGE, ok=400, body={"location": ""}),
    Api("api-source-test", "POST", Scope.SOURCES_MANAGE, ok=400, body={"location": ""}),
    Api("api-source-detail", "GET", Scope.SOURCES_READ, pk="source"),
    Api("api-source-detail", "PATCH", Scope.SOURCES_MANAGE, body={"name": "x"}, pk="source"),
    Api("api-source-approve", "POST", Scope.SOURCES_MANAGE, pk="source"),
    Api("api-source-disable", "POST", Scope.SOURCES_MANAGE, pk="source"),
    Api("api-source-detail", "DELETE", Scope.SOURCES_MANAGE, ok=204, pk="source"),
    Api("api-source-credential", "PUT", Scope.SOURCES_MANAGE, body={"kind": "none"}, pk="source"),
    Api("api-source-credential", "DELETE", Scope.SOURCES_MANAGE, ok=204, pk="source"),
    Api("api-source-latest-run", "GET", Scope.SOURCES_READ, pk="source"),
    Api("api-source-records", "GET", Scope.SOURCES_READ, pk="source"),
    Api("api-context", "GET", Scope.CONTEXT_READ),
    Api("api-search", "GET", Scope.CONTEXT_READ, ok=400),  # no ?q=: query-required
    Api("api-search", "POST", Scope.CONTEXT_READ, ok=400, body={}),  # no q: query-required
    Api("api-brain-embeddings", "GET", Scope.CONTEXT_READ),
    Api("api-precheck", "POST", Scope.CONTEXT_READ, body={"plan": "change the deploy"}),
    Api("api-memory", "GET", Scope.CONTEXT_READ, ok=404),  # a proposal is never served
    Api(
        "api-memory-propose",
        "POST",
        Scope.REVIEWS_PROPOSE,
        ok=202,
        body={"repository": "repo-alpha", "type": "gotcha", "title": "Matrix proposal"},
    ),
    Api("api-usage", "GET", Scope.USAGE_READ),
    Api("api-repository-list", "GET", Scope.REVIEWS_READ),
    Api("api-repository-list", "POST", Scope.REVIEWS_MANAGE, ok=400, body={"name": ""}),
    Api("api-repository-test", "POST", Scope.REVIEWS_MANAGE, ok=400, body={"remote_url": ""}),
    Api("api-repository-detail", "GET", Scope.REVIEWS_READ, pk="repository"),
    Api(
        "api-repository-detail",
        "PATCH",
        Scope.REVIEWS_MANAGE,
        body={"push_enabled": False},
        pk="repository",
    ),
    Api("api-repository-detail", "DELETE", Scope.REVIEWS_MANAGE, ok=204, pk="repository"),
    Api("api-repository-sync", "POST", Scope.REVIEWS_MANAGE, ok=202, pk="repository"),
    Api("api-repository-disable", "POST", Scope.REVIEWS_MANAGE, pk="repository"),
    Api("api-repository-enable", "POST", Scope.REVIEWS_MANAGE, pk="repository"),
    Api("api-proposal-list", "GET", Scope.REVIEWS_READ),
    Api("api-proposal-detail", "GET", Scope.REVIEWS_READ),
    Api("api-proposal-reveal", "POST", Scope.REVIEWS_WRITE, ok=409, body={"reason": "matrix"}),
    Api("api-proposal-approve", "POST", Scope.REVIEWS_WRITE, ok=202, body={}),
    Api("api-proposal-reject", "POST", Scope.REVIEWS_WRITE, ok=202, body={"comment": "no"}),
    Api(
        "api-review-batch",
        "POST",
        Scope.REVIEWS_WRITE,
        ok=202,
        body={"action": "reject", "proposals": ["KEY"], "comment": "no"},
    ),
    Api("api-decision-list", "GET", Scope.REVIEWS_READ),
    Api("api-decision-detail", "GET", Scope.REVIEWS_READ, pk="decision"),
    Api("api-decision-retry", "POST", Scope.REVIEWS_WRITE, ok=202, body={}, pk="decision"),
    Api("api-decision-allow-reproposal", "POST", Scope.REVIEWS_WRITE, body={}, pk="rejection"),
    Api("api-webhook-list", "GET", Scope.TEAM_MANAGE),
    Api("api-webhook-list", "POST", Scope.TEAM_MANAGE, ok=400, body={"url": ""}),
    Api("api-webhook-detail", "GET", Scope.TEAM_MANAGE, pk="endpoint"),
    Api("api-webhook-detail", "PATCH", Scope.TEAM_MANAGE, body={"description": "m"}, pk="endpoint"),
    Api("api-webhook-detail", "DELETE", Scope.TEAM_MANAGE, ok=204, pk="endpoint"),
    Api("api-webhook-rotate", "POST", Scope.TEAM_MANAGE, body={}, pk="endpoint"),
    # the world's endpoint is example.org: the test answers 200 with code dns-failed
    Api("api-webhook-deliveries", "GET", Scope.TEAM_MANAGE, pk="endpoint"),
    Api("api-webhook-test", "POST", Scope.TEAM_MANAGE, body={}, pk="endpoint"),
    Api("api-webhook-end-overlap", "POST", Scope.TEAM_MANAGE, ok=409, body={}, pk="endpoint"),
    Api("api-audit-list", "GET", Scope.TEAM_MANAGE),
    Api("api-member-list", "GET", Scope.TEAM_MANAGE),
    Api("api-member-detail", "GET", Scope.TEAM_MANAGE, pk="membership"),
    Api("api-member-detail", "PATCH", Scope.TEAM_MANAGE, body={"role": "admin"}, pk="membership"),
    Api("api-member-detail", "DELETE", Scope.TEAM_MANAGE, ok=(204, 400), pk="membership"),
    Api("api-invitation-list", "GET", Scope.TEAM_MANAGE),
    Api(
        "api-invitation-list",
        "POST",
        Scope.TEAM_MANAGE,
        ok=201,
        body={"email": "matrix@example.org", "role": "viewer"},
    ),
    Api("api-invitation-detail", "GET", Scope.TEAM_MANAGE, pk="invitation"),
    Api("api-invitation-detail", "DELETE", Scope.TEAM_MANAGE, ok=204, pk="invitation"),
    Api("api-schema", "GET", None, public=True),
    Api("api-docs", "GET", None, public=True),
    Api("bundle-export", "POST", Scope.BUNDLES_EXPORT, body={"scope": "full"}),
    Api("bundle-export-stream", "POST", Scope.BUNDLES_EXPORT, body={"scope": "full"}),
    Api("bundle-import", "POST", Scope.BUNDLES_IMPORT, body="BUNDLE"),
    Api("bundle-import-file", "POST", Scope.BUNDLES_IMPORT, body="BUNDLE", fmt="multipart"),
    Api("bundle-import-job", "GET", Scope.BUNDLES_IMPORT),
    Api("api-brain-chunks", "GET", Scope.BUNDLES_EXPORT),
    Api("api-brain-chunk", "DELETE", Scope.BUNDLES_IMPORT, ok=204),
    Api("api-brain-import-undo", "GET", Scope.BUNDLES_IMPORT),
    Api("api-brain-import-undo", "POST", Scope.BUNDLES_IMPORT, body={}),
    Api("bundle-spec", "GET", None, public=True),
]

# Session roles for the API, through the scope → role mapping (memoryadmin.api.SCOPE_ACTIONS).
SCOPE_LEVEL = {
    Scope.BUNDLES_EXPORT: VIEW,
    Scope.BUNDLES_IMPORT: MANAGE,
    Scope.CONTEXT_READ: VIEW,
    Scope.SOURCES_READ: VIEW,
    Scope.SOURCES_MANAGE: MANAGE,
    Scope.REVIEWS_READ: VIEW,
    Scope.REVIEWS_WRITE: REVIEW,
    Scope.REVIEWS_PROPOSE: VIEW,
    Scope.REVIEWS_MANAGE: MANAGE,
    Scope.USAGE_READ: VIEW,
    Scope.TEAM_MANAGE: MANAGE,
}


def _walk(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, str | None]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            if entry.app_name == "admin":
                yield prefix + str(entry.pattern), "admin:*"
                continue
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.name


def test_it_covers_every_url_pattern():
    # /mcp speaks JSON-RPC with bearer tokens only: every scope, a bad, a revoked and another
    # team's token are driven through the real MCP client in tests/agents/test_mcp.py.
    covered = {p.name for p in PAGES} | {a.name for a in APIS} | {"admin:*", "mcp"}
    found = list(_walk(get_resolver().url_patterns))
    missing = [(route, name) for route, name in found if name not in covered]
    assert not missing, f"URL patterns with no row in the access tables: {missing}"
    stale = covered - {name for _, name in found}
    assert not stale, f"rows for URL names that no longer exist: {stale}"


# ----------------------------------------------------------------------------- helpers


def _client(world: dict[str, Any], role: str, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    if role != "anonymous":
        client.force_login(world["users"][role])
    return client


def _kwargs(name: str, objects: Any, team_slug: str | None = None) -> dict[str, Any]:
    from django.urls import get_resolver as _r

    wanted = set()
    for possibility in _r().reverse_dict.getlist(name):
        for _, params in possibility[0]:
            wanted.update(params)
    ids = objects.ids()
    kwargs = {key: ids[key] for key in wanted if key in ids}
    if team_slug is not None and "team_slug" in kwargs:
        kwargs["team_slug"] = team_slug
    return kwargs


def _rolled_back(call):  # type: ignore[no-untyped-def]
    with transaction.atomic():
        response = call()
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)
        transaction.set_rollback(True)
    return response


def _page_requests(page: Page) -> list[tuple[str, tuple[int, ...] | None, str]]:
    """(method, ok status or None for 405-for-all, level) for a page row."""
    out: list[tuple[str, tuple[int, ...] | None, str]] = []
    if page.get is None:
        out.append(("GET", None, page.level))
    else:
        out.append(("GET", page.get if isinstance(page.get, tuple) else (page.get,), page.level))
    if page.post is not None:
        out.append(
            ("POST", page.post if isinstance(page.post, tuple) else (page.post,), page.level)
        )
    return out


def _page_call(client: Client, method: str, url: str, page: Page):  # type: ignore[no-untyped-def]
    if method == "GET":
        return client.get(url)
    if page.name == "brain-import":
        upload = io.BytesIO(json.dumps(_bundle()).encode())
        upload.name = "b.json"
        return client.post(url, {"file": upload})
    return client.post(url, page.data)


# ----------------------------------------------------------------------------- HTML pages


def test_it_answers_every_page_with_the_status_the_role_allows(world):
    alpha = world["alpha"]
    failures = []
    for page in PAGES:
        url = reverse(page.name, kwargs=_kwargs(page.name, alpha))
        for method, ok, level in _page_requests(page):
            expected = dict.fromkeys(ROLES, (405,)) if ok is None else expected_for(level, ok)
            for role in ROLES:
                client = _client(world, role)
                response = _rolled_back(lambda: _page_call(client, method, url, page))  # noqa: B023
                if response.status_code not in expected[role]:
                    failures.append((page.name, method, role, response.status_code, expected[role]))
                if response.status_code == 302 and role == "anonymous" and level != PUBLIC:
                    assert response["Location"].startswith("/accounts/login/"), page.name
    assert not failures, "\n".join(map(str, failures))


def test_it_never_shows_another_teams_object_through_a_team_url(world):
    """IDOR: alpha's slug with beta's object ids is 404 for everyone, superuser included."""
    alpha, beta = world["alpha"], world["beta"]
    failures = []
    for page in PAGES:
        if not page.idor:
            continue
        url = reverse(page.name, kwargs=_kwargs(page.name, beta, team_slug=alpha.team.slug))
        for method, ok, _ in _page_requests(page):
            if ok is None:
                continue
            for role in ("viewer", "reviewer", "admin", "superuser"):
                client = _client(world, role)
                response = _rolled_back(lambda: _page_call(client, method, url, page))  # noqa: B023
                if response.status_code not in (403, 404) or (
                    role in ("admin", "superuser") and response.status_code != 404
                ):
                    failures.append((page.name, method, role, response.status_code))
    assert not failures, "\n".join(map(str, failures))


def test_it_keeps_the_admin_site_to_staff(world):
    urls = [reverse("admin:index")] + [
        reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        for model in admin.site._registry
    ]
    for url in urls:
        for role in ROLES:
            response = _client(world, role).get(url)
            expected = 200 if role == "superuser" else 302
            assert response.status_code == expected, (url, role, response.status_code)
            if expected == 302:
                assert "/admin/login/" in response["Location"]


# ----------------------------------------------------------------------------- API


def _api_url(api: Api, objects: Any) -> str:
    kwargs = _kwargs(api.name, objects)
    if "pk" in kwargs:
        kwargs["pk"] = getattr(objects, api.pk or "").pk
    kwargs.pop("team_slug", None)
    return reverse(api.name, kwargs=kwargs)


def _api_call(client: APIClient, api: Api, url: str, objects: Any, query: str = ""):  # type: ignore[no-untyped-def]
    url = url + query
    if api.method == "GET":
        return client.get(url)
    body = api.body
    if body == "BUNDLE":
        body = _bundle()
    if isinstance(body, dict) and body.get("proposals") == ["KEY"]:
        body = {**body, "proposals": [objects.proposal.memory_id]}
    if api.fmt == "multipart":
        upload = io.BytesIO(json.dumps(body).encode())
        upload.name = "bundle.json"
        return client.post(url, {"file": upload}, format="multipart")
    return getattr(client, api.method.lower())(url, body, format="json")


def _token_client(make_token, team, scopes: list[str]) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(team, scopes)}")
    return client


def test_it_answers_every_api_endpoint_by_token_scope(world, make_token):
    alpha = world["alpha"]
    all_scopes = [str(s) for s in Scope]
    clients = {scope: _token_client(make_token, alpha.team, [scope]) for scope in all_scopes}
    clients["none"] = APIClient()
    failures = []
    for api in APIS:
        url = _api_url(api, alpha)
        for scope, client in clients.items():
            if api.public:
                expected: tuple[int, ...] = (200,)
            elif scope == "none":
                expected = (401,)
            elif api.scope is None or api.scope == scope:
                expected = api.ok if isinstance(api.ok, tuple) else (api.ok,)
            else:
                expected = (403,)
            response = _rolled_back(lambda: _api_call(client, api, url, alpha))  # noqa: B023
            if response.status_code not in expected:
                failures.append((api.name, scope, response.status_code, expected))
    assert not failures, "\n".join(map(str, failures))


def test_it_answers_every_api_endpoint_by_session_role(world):
    alpha = world["alpha"]
    failures = []
    for api in APIS:
        url = _api_url(api, alpha)
        if api.public:
            level, ok = PUBLIC, api.ok
        elif api.scope is None:
            level, ok = LOGIN, api.ok
        else:
            level, ok = SCOPE_LEVEL[api.scope], api.ok
        expected = expected_for(level, ok)
        expected["anonymous"] = (200,) if api.public else (401,)
        for role in ROLES:
            client = APIClient()
            if role != "anonymous":
                client.force_login(world["users"][role])
            # A session user's team is ?team=; a non-member naming alpha gets 404.
            response = _rolled_back(lambda: _api_call(client, api, url, alpha, "?team=alpha"))  # noqa: B023
            if response.status_code not in expected[role]:
                failures.append((api.name, role, response.status_code, expected[role]))
    assert not failures, "\n".join(map(str, failures))


def test_it_never_shows_another_teams_object_through_the_api(world, make_token):
    """IDOR: alpha's all-scope token on every beta object id is 404 (and beta's data unseen)."""
    alpha, beta = world["alpha"], world["beta"]
    client = _token_client(make_token, alpha.team, [str(s) for s in Scope])
    failures = []
    for api in APIS:
        if api.pk is None and not any(
            key in _kwargs(api.name, beta) for key in ("key", "job_id", "chunk_id", "import_id")
        ):
            continue
        url = _api_url(api, beta)
        response = _rolled_back(lambda: _api_call(client, api, url, beta))  # noqa: B023
        if response.status_code != 404:
            failures.append((api.name, response.status_code))
    assert not failures, failures


def test_it_lists_only_the_callers_team_in_every_list_endpoint(world, make_token):
    alpha, beta = world["alpha"], world["beta"]
    client = _token_client(make_token, alpha.team, [str(s) for s in Scope])
    beta_marks = [
        beta.source.identity,
        beta.repository.name,
        beta.proposal.memory_id,
        "beta chunk",
        "beta record",
    ]
    for name in (
        "api-source-list",
        "api-context",
        "api-repository-list",
        "api-proposal-list",
        "api-me",
    ):
        body = client.get(reverse(name)).content.decode()
        for mark in beta_marks:
            assert mark not in body, (name, mark)
    export = client.post(reverse("bundle-export"), {"scope": "full"}, format="json")
    body = (b"".join(export.streaming_content) if export.streaming else export.content).decode()
    assert "beta chunk" not in body and "alpha chunk" in body
    # Session user of alpha naming beta with ?team= gets 404, not beta's data.
    session = APIClient()
    session.force_login(world["users"]["admin"])
    assert session.get(reverse("api-source-list") + "?team=beta").status_code == 404


def test_it_shows_each_team_only_its_own_objects_on_its_pages(world):
    alpha, beta = world["alpha"], world["beta"]
    client = _client(world, "admin")
    pages = [
        "team-home",
        "source-list",
        "review-queue",
        "review-history",
        "repository-list",
        "brain",
        "webhook-list",
        "token-list",
        "team-audit",
    ]
    beta_marks = [
        beta.source.identity,
        beta.repository.name,
        "beta proposal",
        "beta chunk",
        "beta-token",
        beta.endpoint.url,
    ]
    for name in pages:
        html = client.get(reverse(name, kwargs={"team_slug": alpha.team.slug})).content.decode()
        for mark in beta_marks:
            assert mark not in html, (name, mark)
