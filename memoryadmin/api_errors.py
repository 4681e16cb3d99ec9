"""One JSON error shape for the whole API: {"error": {"code", "message", "details"}}."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from formats.memoryai import BundleError
from memoryadmin.errors import Conflict, DomainError, Forbidden, NotFound, Unprocessable

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


ERROR_DESCRIPTIONS = {
    400: "The request is invalid (`details` says which field, when there is one).",
    401: "No credentials, or an unknown, revoked or expired token.",
    403: "The token lacks the scope, or the user's role is too low.",
    404: "No such object in the caller's team.",
    409: "The request conflicts with the current state.",
    413: "The body is larger than the server accepts.",
    415: "The body's media type is not the one this endpoint reads.",
    422: "The body is well-formed but breaks the format's rules.",
    429: "Too many failed token attempts from this address; retry later.",
}


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable, machine-readable error code.")
    message = serializers.CharField(help_text="Human-readable explanation.")
    details = serializers.JSONField(
        allow_null=True, help_text="Field errors or other structured context, or null."
    )


class ErrorSerializer(serializers.Serializer):
    """The one error shape of the whole API (OpenAPI component `Error`)."""

    error = ErrorDetailSerializer()


def error_responses(*status_codes: int) -> dict[int, OpenApiResponse]:
    """OpenAPI responses for `extend_schema(responses=...)`: each status with the Error body."""
    return {
        code: OpenApiResponse(
            ErrorSerializer,
            description=ERROR_DESCRIPTIONS[code],
            examples=[
                OpenApiExample(
                    f"{code} {DEFAULT_CODES[code]}",
                    value={
                        "error": {
                            "code": DEFAULT_CODES[code],
                            "message": ERROR_DESCRIPTIONS[code],
                            "details": None,
                        }
                    },
                    status_codes=[code],
                    response_only=True,
                )
            ],
        )
        for code in status_codes
    }


# What every token-authenticated endpoint can answer, besides its own errors.
AUTH_ERRORS = (401, 403, 429)


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


# The one table from domain errors to statuses: the first kind that matches wins; any other
# ValidationError is a 400.
DOMAIN_STATUSES: tuple[tuple[type[Exception], int], ...] = (
    (BundleError, 422),
    (Forbidden, 403),
    (NotFound, 404),
    (Conflict, 409),
    (Unprocessable, 422),
    (DjangoValidationError, 400),
)


def _details(exc: DjangoValidationError, fields: dict[str, str]) -> Any:
    """Field errors by the body's own names; else the error's own context, or the messages
    when there are several (one message says it all)."""
    if hasattr(exc, "error_dict"):
        return {fields.get(name, name): errors for name, errors in exc.message_dict.items()}
    if isinstance(exc, DomainError) and exc.details is not None:
        return exc.details
    return exc.messages if len(exc.messages) > 1 else None


def domain_error_response(exc: Exception, fields: dict[str, str] | None = None) -> Response | None:
    """Answer a domain error (services raise these, views don't catch them), or None.

    `fields` renames a service's field names to the request body's (a view's `error_fields`)."""
    status_code = next((s for kind, s in DOMAIN_STATUSES if isinstance(exc, kind)), None)
    if status_code is None:
        return None
    if isinstance(exc, BundleError):
        return error_response(422, exc.code, exc.message, {"path": exc.path} if exc.path else None)
    assert isinstance(exc, DjangoValidationError)
    code = getattr(exc, "code", None) or "invalid"
    return error_response(status_code, code, " ".join(exc.messages), _details(exc, fields or {}))


def _allowed_methods(view: Any) -> list[str]:
    """What a caller may send instead (the `Allow` header, without HEAD and OPTIONS)."""
    methods = getattr(view, "allowed_methods", None) or []
    return [m for m in methods if m not in ("HEAD", "OPTIONS")] or ["OPTIONS"]


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApiError):
        return error_response(exc.status_code, exc.error_code, str(exc.detail), exc.details)
    domain = domain_error_response(exc, getattr(context.get("view"), "error_fields", None))
    if domain is not None:
        return domain
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
    elif isinstance(exc, exceptions.MethodNotAllowed):
        allowed = _allowed_methods(context.get("view"))
        method = getattr(context.get("request"), "method", "")
        message = f"{method} is not allowed here; use {' or '.join(allowed)}."
        details = {"allowed": allowed}
    else:
        message = str(exc.detail)
        details = None
    headers = {
        k: v
        for k, v in response.headers.items()
        if k in ("WWW-Authenticate", "Retry-After", "Allow")
    }
    return error_response(status_code, code, message, details, headers)
