"""Request-wide guards: a request id, a refusal of characters no input may hold, and the CSP."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from memoryadmin.audit import current_ip, current_request_id
from memoryadmin.authentication import client_ip


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = uuid.uuid4().hex
        id_token = current_request_id.set(request_id)
        ip_token = current_ip.set(client_ip(request))  # XFF only from trusted proxies
        try:
            response = self.get_response(request)
        finally:
            current_request_id.reset(id_token)
            current_ip.reset(ip_token)
        response["X-Request-Id"] = request_id
        return response


# --------------------------------------------------------------------- input characters

# Never valid in any text we store or look up (PostgreSQL text cannot even hold NUL): the C0
# controls but tab, LF and CR (form text keeps its lines), DEL, and lone surrogates.
FORBIDDEN_IN_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
# A path holds no control character at all.
FORBIDDEN_IN_PATH = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")
# Paths whose callers are programs: they get the API's JSON error shape.
JSON_PATH_PREFIXES = ("/api/", "/v1/", "/mcp")
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _printable(text: str) -> str:
    """The name of a field as a person can read it: controls shown as escapes."""
    return FORBIDDEN_IN_PATH.sub(lambda m: m.group().encode("unicode_escape").decode(), text)


def _first_bad_field(items: Iterable[tuple[str, list[str]]]) -> str | None:
    for key, values in items:
        if FORBIDDEN_IN_TEXT.search(key) or any(FORBIDDEN_IN_TEXT.search(v) for v in values):
            return _printable(key)
    return None


class RequestCharactersMiddleware:
    """A 400 before any view when the path, the query or a form body holds a control character.

    One check for every view, so no lookup, filter or form ever passes a NUL to the database;
    cookies holding one are dropped.
    Form bodies are read only where Django would read them anyway: url-encoded posts, and
    multipart posts to HTML pages (the CSRF check parses those); an API's multipart upload is
    left to its view, which streams it to disk.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # A cookie we set never holds one, so such a cookie is forged: ignore it (a 400 would
        # lock the browser out for as long as it keeps the cookie).
        for name, value in list(request.COOKIES.items()):
            if FORBIDDEN_IN_TEXT.search(name) or FORBIDDEN_IN_TEXT.search(value):
                del request.COOKIES[name]
        problem = self._problem(request)
        if problem is not None:
            return self._refuse(request, *problem)
        return self.get_response(request)

    @staticmethod
    def _problem(request: HttpRequest) -> tuple[str, str | None] | None:
        if FORBIDDEN_IN_PATH.search(request.path):
            return "path", None
        field = _first_bad_field(request.GET.lists())
        if field is not None:
            return "query", field
        if request.method == "POST" and request.content_type in FORM_TYPES:
            if request.content_type == FORM_TYPES[1] and request.path.startswith(
                JSON_PATH_PREFIXES
            ):
                return None
            field = _first_bad_field(request.POST.lists())
            if field is not None:
                return "form", field
        return None

    @staticmethod
    def _refuse(request: HttpRequest, where: str, field: str | None) -> HttpResponse:
        place = {"path": "the address", "query": "the query string", "form": "the form"}[where]
        message = f"The request has an invalid character (a control character) in {place}."
        if request.path.startswith(JSON_PATH_PREFIXES):
            details = {"where": where, "field": field}
            body = {"error": {"code": "invalid-characters", "message": message, "details": details}}
            return JsonResponse(body, status=400)
        return render(request, "memoryadmin/bad_request.html", {"message": message}, status=400)


# --------------------------------------------------------------------- content security policy


def policy_extend(policy: str, additions: dict[str, str]) -> str:
    """The policy with sources added to some directives (a directive it lacks is appended)."""
    directives = [part.strip() for part in policy.split(";") if part.strip()]
    pending = dict(additions)
    for index, directive in enumerate(directives):
        name = directive.split(None, 1)[0]
        if name in pending:
            directives[index] = f"{directive} {pending.pop(name)}"
    directives += [f"{name} {sources}" for name, sources in pending.items()]
    return "; ".join(directives)


def content_security_policy_extend(
    additions: dict[str, str],
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """A view decorator: its responses carry the site's policy with these sources added."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            response = view(request, *args, **kwargs)
            if settings.CONTENT_SECURITY_POLICY:
                policy = policy_extend(settings.CONTENT_SECURITY_POLICY, additions)
                response["Content-Security-Policy"] = policy
            return response

        return wrapper

    return decorator


class ContentSecurityPolicyMiddleware:
    """Send settings.CONTENT_SECURITY_POLICY on every response that has none of its own.

    A view that needs a looser policy (the API reference: Redoc's runtime styles and its search
    worker) sets its own header, which this leaves alone.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.policy = settings.CONTENT_SECURITY_POLICY

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy
        return response
