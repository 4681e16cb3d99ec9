"""One JSON error shape for the whole API: {"error": {"code", "message", "details"}}."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

DEFAULT_CODES = {
    400: "bad-request",
    401: "not-authenticated",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    406: "not-acceptable",
    409: "conflict",
    413: "too-large",
    415: "unsupported-media-type",
    422: "invalid",
    429: "throttled",
}


class ApiError(exceptions.APIException):
    """Raise from a view or service adapter with an explicit status, code and message."""

    def __init__(self, status_code: int, code: str, message: str, details: Any = None) -> None:
        self.status_code = status_code
        self.error_code = code
        self.details = details
        super().__init__(detail=message, code=code)


def error_response(
    status_code: int, code: str, message: str, details: Any = None, headers: dict | None = None
) -> Response:
    body = {"error": {"code": code, "message": message, "details": details}}
    return Response(body, status=status_code, headers=headers)


def _first_code(codes: Any) -> str | None:
    if isinstance(codes, str):
        return codes
    if isinstance(codes, list) and codes:
        return _first_code(codes[0])
    if isinstance(codes, dict) and codes:
        return _first_code(next(iter(codes.values())))
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApiError):
        return error_response(exc.status_code, exc.error_code, str(exc.detail), exc.details)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "Not found.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    response = drf_exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    status_code = response.status_code
    code = _first_code(exc.get_codes())
    if code in (
        None,
        "invalid",
        "error",
        "parse_error",
        "not_found",
        "permission_denied",
        "authentication_failed",
        "not_authenticated",
        "method_not_allowed",
        "unsupported_media_type",
        "throttled",
        "not_acceptable",
    ):
        code = DEFAULT_CODES.get(status_code, "error")
    if isinstance(exc, exceptions.ValidationError):
        message = "The request is invalid."
        details: Any = exc.detail
        status_code = status.HTTP_400_BAD_REQUEST
    else:
        message = str(exc.detail)
        details = None
    headers = {
        k: v
        for k, v in response.headers.items()
        if k in ("WWW-Authenticate", "Retry-After", "Allow")
    }
    return error_response(status_code, code, message, details, headers)
