"""Error pages: 400, 403, 404, 405, 429 and 500 inside the layout, with the reason and a way back.

The API's paths (`/api/`, `/v1/`, `/mcp`) keep the JSON error body of `memoryadmin/api_errors.py`
for errors raised outside DRF (an unknown route, a refused host). The 500 page is rendered
without a request context: the context processors (teams, roles) read the database that may be
what failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template import loader
from django.urls import NoReverseMatch, reverse
from django_ratelimit.exceptions import Ratelimited

from memoryadmin.api_errors import DEFAULT_CODES
from memoryadmin.middleware import JSON_PATH_PREFIXES
from memoryadmin.models import Team
from memoryadmin.permissions import RoleRequired, role_of

TITLES = {
    400: "Bad request",
    403: "Not allowed",
    404: "Page not found",
    405: "Not a page to open",
    429: "Too many requests",
    500: "Something went wrong",
}
REASONS = {
    400: "The request could not be understood. Check the address or the form and try again.",
    403: "Your account may not open this page.",
    404: "There is no page at this address, or it belongs to a team you are not a member of.",
    405: "This address does not answer that kind of request.",
    429: "Too many attempts in a short time. Wait a minute, then try again.",
    500: "The server could not answer this request. It has been logged; try again shortly.",
}


def _wants_json(request: HttpRequest) -> bool:
    return request.path.startswith(JSON_PATH_PREFIXES)


def _json(status: int, message: str) -> JsonResponse:
    body = {"error": {"code": DEFAULT_CODES.get(status, "error"), "message": message}}
    body["error"]["details"] = None
    return JsonResponse(body, status=status)


def _way_back(request: HttpRequest, *, by_slug: bool = False) -> tuple[str, str]:
    """(address, label) of the link the page offers: the team's dashboard, else the home page.
    `by_slug`: the team the URL names when no view looked it up (a refused method)."""
    team = getattr(request, "team", None)
    match = getattr(request, "resolver_match", None)
    slug = match.kwargs.get("team_slug") if (by_slug and match is not None) else None
    try:
        if team is not None:
            return reverse("team-home", args=[team.slug]), f"Back to the {team.name} dashboard"
        if slug:
            return reverse("team-home", args=[slug]), "Back to the team's dashboard"
        return reverse("home"), "Go to your teams"
    except NoReverseMatch:  # pragma: no cover - the URLconf always has both
        return "/", "Go to the start page"


def error_page(
    request: HttpRequest, status: int, reason: str | None = None, *, back_by_slug: bool = False
) -> HttpResponse:
    """The layout's error page (the 400/403/404/405/429 handlers and any view may use it)."""
    message = reason or REASONS[status]
    if _wants_json(request):
        return _json(status, message)
    back_url, back_label = _way_back(request, by_slug=back_by_slug)
    context: dict[str, Any] = {
        "status": status,
        "title": TITLES[status],
        "reason": message,
        "back_url": back_url,
        "back_label": back_label,
    }
    return render(request, "errors/error.html", context, status=status)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_page(request, 400)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if isinstance(exception, Ratelimited):
        return error_page(request, 429)
    if isinstance(exception, RoleRequired):
        return error_page(request, 403, str(exception))
    return error_page(request, 403)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return error_page(request, 404)


def method_not_allowed(request: HttpRequest, *, allowed: str) -> HttpResponse:
    """A page's 405: a button's address opened as a link, or a form sent to a page that only
    shows itself (MethodNotAllowedPageMiddleware below)."""
    methods = {m.strip().upper() for m in allowed.split(",") if m.strip()} - {"OPTIONS", "HEAD"}
    if methods == {"POST"}:
        reason = (
            "This address is the target of a button (it takes a form sent with POST), so "
            "opening it as a page does nothing. Go back to the page with the button and use it."
        )
    elif methods:
        reason = (
            f"This address does not take {request.method}; it answers "
            f"{' and '.join(sorted(methods))}. Open it as a page instead."
        )
    else:
        reason = None
    _team_from_url(request)
    return error_page(request, 405, reason, back_by_slug=True)


def _team_from_url(request: HttpRequest) -> None:
    """A refused method never reached the view that looks the team up: look up the team the
    URL names, for the page's navigation, when the user is one of its members (to anyone else
    the page says nothing of the team, as its views' 404 does not)."""
    match = getattr(request, "resolver_match", None)
    slug = match.kwargs.get("team_slug") if match is not None else None
    user = getattr(request, "user", None)
    if getattr(request, "team", None) is not None or not slug or user is None:
        return
    if not user.is_authenticated:
        return
    team = Team.objects.filter(slug=slug).first()
    if team is not None and role_of(user, team) is not None:
        request.team = team  # type: ignore[attr-defined]


def too_many_requests(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """django-ratelimit's RATELIMIT_VIEW: a 429, not the 403 its exception would be."""
    return error_page(request, 429)


def server_error(request: HttpRequest) -> HttpResponse:
    if _wants_json(request):
        return _json(500, "The server could not answer this request.")
    # No request: no context processors, no session, no database.
    html = loader.get_template("errors/500.html").render(
        {"status": 500, "title": TITLES[500], "reason": REASONS[500]}
    )
    return HttpResponse(html, status=500)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: a form sent from an old page (or without cookies) in plain words."""
    return error_page(
        request,
        403,
        "This form expired or was sent from another site. Go back, reload the page and send "
        "it again (cookies must be allowed for this site).",
    )


class MethodNotAllowedPageMiddleware:
    """A page's empty 405 (`require_POST` opened by a link, a reload, a bookmark) becomes the
    layout's error page saying which method the address takes; the API keeps its JSON."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code != 405
            or response.content
            or request.path.startswith(JSON_PATH_PREFIXES)
        ):
            return response
        page = method_not_allowed(request, allowed=response.get("Allow", ""))
        page["Allow"] = response.get("Allow", "")
        return page
