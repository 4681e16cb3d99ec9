"""HTTP profile (§4): /v1/brain/import, /v1/brain/import/file, /v1/brain/import/jobs/<id>."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError
from django.http import HttpRequest, QueryDict
from django.urls import reverse
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import exceptions
from rest_framework.authentication import CSRFCheck, SessionAuthentication
from rest_framework.exceptions import ParseError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from bundles.api.schemas import IMPORT_FLAGS, IMPORT_JOB, IMPORT_RESPONSES, MINIMAL_BUNDLE
from bundles.imports import (
    ImportOptions,
    bundle_import_upload,
    import_failure_record,
    job_progress,
    propose_target,
)
from bundles.models import ImportJob
from bundles.uploads import BundleUploadHandler, Spooled, TooLargeError, spool_body
from formats import memoryai as protocol
from memoryadmin.api import HasScope, request_team
from memoryadmin.api_errors import AUTH_ERRORS, ApiError, error_responses
from memoryadmin.audit import Actor
from memoryadmin.authentication import BearerTokenAuthentication
from memoryadmin.models import Scope, Team

logger = logging.getLogger(__name__)


def _media_type(request: Request) -> str:
    return (request.content_type or "").split(";")[0].strip().lower()


def _flag(request: Request, name: str, default: bool) -> bool:
    value = request.query_params.get(name)
    if value is None:
        return default
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ApiError(400, "bad-request", f"{name} must be 'true' or 'false'", {"param": name})


def import_options(request: Request) -> ImportOptions:
    return ImportOptions(
        keep_embeddings=_flag(request, "keep_embeddings", True),
        accept_foreign_embeddings=_flag(request, "accept_foreign_embeddings", False),
        propose_to=_propose_to(request),
    )


def _propose_to(request: Request) -> int | None:
    """`?propose_to=<repository id>`: a repository of the token's team that can be pushed."""
    value = request.query_params.get("propose_to")
    if value in (None, ""):
        return None
    return propose_target(team=request_team(request), repository_id=value)


def check_content_length(request: Request) -> None:
    raw = request.META.get("CONTENT_LENGTH") or "0"
    try:
        length = int(raw)
    except ValueError as exc:
        raise ApiError(400, "bad-request", "Content-Length is not a number") from exc
    # Multipart framing adds a little; allow 64 KiB of it over the bundle limit.
    if length > settings.BUNDLE_MAX_BYTES + 65_536:
        raise ApiError(413, "too-large", _too_large_message(), {"content_length": length})


def _too_large_message() -> str:
    return f"Bundles may be at most {settings.BUNDLE_MAX_BYTES} bytes."


@contextmanager
def import_failures_audited(*, team: Team, actor: Actor) -> Iterator[None]:
    """Every import refused or failed after authentication leaves `bundle.import_failed`
    (written in its own transaction, after the import's rolled back)."""
    try:
        yield
    except protocol.BundleError as exc:  # answered 422 by memoryadmin.api_errors
        _failure_record(team=team, actor=actor, code=exc.code, message=exc.message)
        raise
    except ValidationError as exc:  # answered 400 with its code (malformed JSON)
        code = exc.code or "invalid"
        _failure_record(team=team, actor=actor, code=code, message=exc.messages[0])
        raise
    except ApiError as exc:
        _failure_record(team=team, actor=actor, code=exc.error_code, message=str(exc.detail))
        raise
    except exceptions.APIException as exc:
        code = exc.get_codes() if isinstance(exc.get_codes(), str) else "bad-request"
        _failure_record(team=team, actor=actor, code=code, message=str(exc.detail))
        raise
    except Exception as exc:  # a bug or an outage: the 500 is audited too
        _failure_record(
            team=team, actor=actor, code="internal-error", message=f"{type(exc).__name__}: {exc}"
        )
        raise


def _failure_record(*, team: Team, actor: Actor, code: str, message: str) -> None:
    try:
        import_failure_record(team=team, actor=actor, code=code, message=message)
    except DatabaseError:  # the database is what failed: the original error is what counts
        logger.exception("bundle.import_failed not recorded for team %s", team.pk)


class _BodyUnread:
    """The request as Django's CSRF check sees it, with an empty POST: the token must come in
    the X-CSRFToken header, and checking it reads nothing of the body."""

    POST = QueryDict()

    def __init__(self, request: HttpRequest) -> None:
        object.__setattr__(self, "_wrapped", request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wrapped, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._wrapped, name, value)


class HeaderCsrfSessionAuthentication(SessionAuthentication):
    """Session authentication whose CSRF check never reads (and spools) the body: the import
    endpoints know who is calling, and whether they may, before any upload reaches disk."""

    def enforce_csrf(self, request: Request) -> None:
        check = CSRFCheck(lambda _: None)  # type: ignore[arg-type]
        unread = _BodyUnread(request._request)
        check.process_request(unread)  # type: ignore[arg-type]
        reason = check.process_view(unread, None, (), {})  # type: ignore[arg-type]
        if reason:
            raise exceptions.PermissionDenied(
                f"CSRF Failed: {reason} Send the token in the X-CSRFToken header: this "
                "endpoint checks it before reading the body."
            )


class HeaderCsrfSessionScheme(OpenApiAuthenticationExtension):
    """OpenAPI: the session cookie, with the CSRF token in the X-CSRFToken header."""

    target_class = "bundles.api.imports.HeaderCsrfSessionAuthentication"
    name = "cookieAuthCsrfHeader"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": settings.SESSION_COOKIE_NAME,
            "description": "A signed-in session; the CSRF token goes in the X-CSRFToken "
            "header (it is checked before the body is read).",
        }


IMPORT_AUTHENTICATION = [BearerTokenAuthentication, HeaderCsrfSessionAuthentication]


def job_payload(job: ImportJob) -> dict[str, Any]:
    done, total = job_progress(job)
    return {
        "id": job.pk,
        "url": reverse("bundle-import-job", kwargs={"job_id": job.pk}),
        "state": job.state,
        "filename": job.filename,
        "size_bytes": job.size_bytes,
        "progress": {"records_done": done, "records_total": total},
        "report": job.report,
        "error": {"code": job.error_code, "message": job.error_message} if job.error_code else None,
        "created_at": protocol.format_timestamp(job.created_at),
        "started_at": protocol.format_timestamp(job.started_at),
        "finished_at": protocol.format_timestamp(job.finished_at),
    }


class _BrainView(APIView):
    permission_classes = [HasScope]


class ImportView(_BrainView):
    required_scopes = {"POST": Scope.BUNDLES_IMPORT}
    authentication_classes = IMPORT_AUTHENTICATION
    parser_classes: list = []  # the body is read as a bounded stream, never whole by DRF

    @extend_schema(
        summary="Import a bundle (JSON body)",
        parameters=IMPORT_FLAGS,
        request={"application/json": OpenApiTypes.OBJECT},
        responses=IMPORT_RESPONSES,
        examples=[OpenApiExample("Bundle", value=MINIMAL_BUNDLE, request_only=True)],
    )
    def post(self, request: Request) -> Response:
        team, actor = request_team(request), Actor.from_request(request)
        with import_failures_audited(team=team, actor=actor):
            if _media_type(request) != "application/json":
                raise ApiError(
                    415, "unsupported-media-type", "Send the bundle as application/json."
                )
            options = import_options(request)
            check_content_length(request)
            try:
                spooled = spool_body(
                    request._request,
                    max_bytes=settings.BUNDLE_MAX_BYTES,
                    memory_bytes=settings.BUNDLE_SYNC_IMPORT_MAX_BYTES,
                )
            except TooLargeError as exc:
                raise ApiError(413, "too-large", _too_large_message()) from exc
            result = bundle_import_upload(team=team, actor=actor, spooled=spooled, options=options)
        return _import_response(result)


class ImportFileView(_BrainView):
    required_scopes = {"POST": Scope.BUNDLES_IMPORT}
    authentication_classes = IMPORT_AUTHENTICATION
    parser_classes = [MultiPartParser]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # Closed (writes nothing) until post() opens it: authentication and permission checks
        # (DRF's, run by super().initial) come first and never read the body.
        self.upload_handler = BundleUploadHandler(
            request._request, max_bytes=settings.BUNDLE_MAX_BYTES
        )
        request._request.upload_handlers = [self.upload_handler]
        super().initial(request, *args, **kwargs)

    @extend_schema(
        summary="Import a bundle uploaded as a file (multipart, field 'file')",
        parameters=IMPORT_FLAGS,
        request={
            "multipart/form-data": {  # a file part (a FileField would render as a URI string)
                "type": "object",
                "properties": {"file": {"type": "string", "format": "binary"}},
                "required": ["file"],
            }
        },
        responses=IMPORT_RESPONSES,
    )
    def post(self, request: Request) -> Response:
        team, actor = request_team(request), Actor.from_request(request)
        owned = False
        try:
            with import_failures_audited(team=team, actor=actor):
                result = self._import(request, team, actor)
                owned = isinstance(result, ImportJob)
        finally:
            # Refused, failed or imported: the scratch file goes, unless a job now owns it.
            if not owned:
                self.upload_handler.discard()
        return _import_response(result)

    def _import(self, request: Request, team: Team, actor: Actor) -> ImportJob | dict[str, Any]:
        if _media_type(request) != "multipart/form-data":
            raise ApiError(
                415,
                "unsupported-media-type",
                "Upload the bundle as multipart/form-data in the field 'file'.",
            )
        options = import_options(request)
        check_content_length(request)
        handler = self.upload_handler
        handler.accepting = True  # the caller may import: now the body is read
        try:
            upload = request.FILES.get("file")
        except ParseError as exc:
            raise ApiError(400, "bad-request", f"The multipart body is malformed: {exc}") from exc
        if handler.too_large:
            raise ApiError(413, "too-large", _too_large_message())
        if handler.file_parts > 1:
            raise ApiError(
                400,
                "bad-request",
                f"Send exactly one part named 'file' (this body has {handler.file_parts}).",
                {"field": "file"},
            )
        if upload is None or not hasattr(upload, "scratch_path"):
            raise ApiError(400, "file-missing", "Attach the bundle in the form field 'file'.")
        upload.close()
        spooled = Spooled(size=upload.size or 0, path=upload.scratch_path)
        return bundle_import_upload(
            team=team, actor=actor, spooled=spooled, options=options, filename=upload.name or ""
        )


def _import_response(result: ImportJob | dict[str, Any]) -> Response:
    """200 and the ImportReport; or 202 and the job that now runs it (URL also in Location)."""
    if isinstance(result, ImportJob):
        job = job_payload(result)
        return Response({"job": job}, status=202, headers={"Location": job["url"]})
    return Response(result)


class ImportJobView(_BrainView):
    required_scopes = {"GET": Scope.BUNDLES_IMPORT}

    @extend_schema(
        summary="A large import's state, progress and report",
        responses={200: IMPORT_JOB, **error_responses(*AUTH_ERRORS, 404)},
    )
    def get(self, request: Request, job_id: int) -> Response:
        job = ImportJob.objects.filter(pk=job_id, team=request_team(request)).first()
        if job is None:
            raise ApiError(404, "not-found", "No such import job for this team.")
        return Response(job_payload(job))
