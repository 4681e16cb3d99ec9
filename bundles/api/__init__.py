"""HTTP profile (§4): /v1/brain/export, /export/stream, /import, /import/file, /v1/spec."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError
from django.http import HttpRequest, QueryDict, StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import exceptions, permissions, serializers
from rest_framework.authentication import CSRFCheck, SessionAuthentication
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from bundles.models import ImportJob
from bundles.services import (
    ExportRequest,
    ImportOptions,
    bundle_export_json,
    bundle_export_stream,
    bundle_import,
    import_failure_record,
    import_job_create,
)
from bundles.services.imports import job_progress
from bundles.services.proposals import propose_target
from bundles.spec import server_spec
from bundles.uploads import BundleUploadHandler, Spooled, TooLargeError, spool_body
from formats import memoryai as protocol
from memoryadmin.api import HasScope, request_team
from memoryadmin.api_errors import AUTH_ERRORS, ApiError, domain_error_response, error_responses
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


def run_import(
    *, team: Team, actor: Actor, spooled: Spooled, options: ImportOptions, filename: str = ""
) -> tuple[int, dict[str, Any]]:
    """Small bodies import now (200 + ImportReport); large ones become a job (202), which then
    owns the scratch file. Any other way out deletes it. Failures are the caller's to audit
    (`import_failures_audited`)."""
    if spooled.path is not None and spooled.size > settings.BUNDLE_SYNC_IMPORT_MAX_BYTES:
        try:
            job = import_job_create(
                team=team,
                actor=actor,
                scratch_path=spooled.path,
                size_bytes=spooled.size,
                filename=filename,
                options=options,
            )
        except BaseException:
            spooled.discard()
            raise
        return 202, {"job": job_payload(job)}
    data = spooled.data
    if data is None:
        assert spooled.path is not None
        try:
            data = spooled.path.read_bytes()
        finally:
            spooled.discard()
    bundle = parse_bundle(data)
    return 200, bundle_import(
        team=team, actor=actor, bundle=bundle, options=options, size=spooled.size
    )


def parse_bundle(data: bytes) -> Any:
    """orjson's fast parse; what it refuses gets the standard library's strict one, which also
    takes escaped lone surrogates (valid JSON text that no database stores): the format
    library then refuses those per record, instead of the whole bundle."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        try:
            return protocol.parse_json(data)
        except protocol.BundleError:
            raise ApiError(400, "malformed-json", f"The body is not valid JSON: {exc}") from exc


@contextmanager
def import_failures_audited(*, team: Team, actor: Actor) -> Iterator[None]:
    """Every import refused or failed after authentication leaves `bundle.import_failed`
    (written in its own transaction, after the import's rolled back)."""
    try:
        yield
    except ApiError as exc:
        _failure_record(team=team, actor=actor, code=exc.error_code, message=str(exc.detail))
        raise
    except exceptions.APIException as exc:
        code = exc.get_codes() if isinstance(exc.get_codes(), str) else "bad-request"
        _failure_record(team=team, actor=actor, code=code, message=str(exc.detail))
        raise
    except (protocol.BundleError, ValidationError) as exc:  # the error table answers these
        error = domain_error_response(exc)
        assert error is not None
        code, message = error.data["error"]["code"], error.data["error"]["message"]
        _failure_record(team=team, actor=actor, code=code, message=message)
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

    target_class = "bundles.api.HeaderCsrfSessionAuthentication"
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


def _export_request(request: Request) -> ExportRequest:
    try:
        body = request.data
    except ParseError as exc:
        raise ApiError(400, "malformed-json", "The body is not valid JSON.") from exc
    if not body:
        body = {}
    if not isinstance(body, dict):
        raise ApiError(400, "bad-request", "The body must be a JSON object {scope, since?}.")
    try:
        since = protocol.parse_timestamp(body.get("since"), "since", "since")
        return ExportRequest(scope=body.get("scope") or "full", since=since)
    except protocol.BundleError as exc:
        raise ApiError(400, exc.code, exc.message, {"path": exc.path}) from exc


# OpenAPI descriptions of the bodies above (documentation only; the code above is the truth).
def _records() -> serializers.ListField:
    return serializers.ListField(child=serializers.DictField(), required=False)


def _tally() -> serializers.DictField:
    return serializers.DictField(child=serializers.IntegerField())


EXPORT_BODY = inline_serializer(
    "ExportRequest",
    {
        "scope": serializers.ChoiceField(choices=protocol.SCOPES, default="full"),
        "since": serializers.DateTimeField(
            required=False, allow_null=True, help_text="Required with scope 'since'."
        ),
    },
)
BUNDLE = inline_serializer(
    "Bundle",
    {
        "format": serializers.CharField(),
        "version": serializers.IntegerField(),
        "generator": serializers.CharField(),
        "exported_at": serializers.CharField(),
        "manifest": serializers.DictField(),
        **{name: _records() for name in protocol.SECTIONS},
    },
)


def _count(text: str) -> serializers.IntegerField:
    return serializers.IntegerField(help_text=text)


IMPORT_PROPOSALS = inline_serializer(
    "ImportProposals",
    {
        "repository": _count("The repository id given as propose_to."),
        "candidates": _count("DNA chunks of the bundle (the first 200 are considered)."),
        "proposed": _count("Written as proposals: they wait in the review queue."),
        "skipped_existing": _count(
            "Already known to the repository: there now (waiting for review, active or any "
            "other status), on its way there from an earlier import not pushed yet, or "
            "approved there before (even if the file was removed since)."
        ),
        "skipped_rejected": _count(
            "Rejected there by a reviewer (a pushed rejection of the same text); a warning per "
            "chunk names the decision, reviewer, date and comment. Counts until a reviewer "
            "allows it again (POST /api/reviews/decisions/{id}/allow-reproposal/)."
        ),
        "skipped_secret": _count("Not written: the secret scan found something."),
        "skipped_invalid": _count("Not written: the MemoryRail reader refused the file."),
        "skipped_limit": _count("DNA chunks past the 200 per import."),
        "proposal": serializers.IntegerField(
            allow_null=True, help_text="The import proposal (null when nothing was written)."
        ),
    },
    required=False,
    help_text="Only with propose_to.",
)
IMPORT_REPORT = inline_serializer(
    "ImportReport",
    {
        "success": serializers.BooleanField(),
        "report": inline_serializer(
            "ImportReportBody",
            {
                "bundle_format": serializers.CharField(),
                "bundle_version": serializers.IntegerField(),
                "embedding_model_match": serializers.BooleanField(),
                **{name: _tally() for name in protocol.SECTIONS},
                "warnings": serializers.ListField(child=serializers.CharField()),
                "proposals": IMPORT_PROPOSALS,
            },
        ),
    },
)
IMPORT_JOB = inline_serializer(
    "ImportJob",
    {
        "id": serializers.IntegerField(),
        "url": serializers.CharField(),
        "state": serializers.ChoiceField(choices=ImportJob._meta.get_field("state").choices),
        "filename": serializers.CharField(allow_blank=True),
        "size_bytes": serializers.IntegerField(),
        "progress": inline_serializer(
            "ImportProgress",
            {
                "records_done": serializers.IntegerField(),
                "records_total": serializers.IntegerField(),
            },
        ),
        "report": serializers.JSONField(allow_null=True, help_text="The ImportReport when done."),
        "error": inline_serializer(
            "ImportJobError",
            {"code": serializers.CharField(), "message": serializers.CharField()},
            allow_null=True,
        ),
        "created_at": serializers.CharField(),
        "started_at": serializers.CharField(allow_null=True),
        "finished_at": serializers.CharField(allow_null=True),
    },
)
IMPORT_FLAGS = [
    *(
        OpenApiParameter(name, OpenApiTypes.STR, enum=["true", "false"], description=text)
        for name, text in (
            ("keep_embeddings", "Default true; false drops every embedding."),
            ("accept_foreign_embeddings", "Default false; true keeps another model's embeddings."),
        )
    ),
    OpenApiParameter(
        "propose_to",
        OpenApiTypes.INT,
        description="Also propose the imported memories to this review repository (its id).",
    ),
]
IMPORT_RESPONSES = {
    200: IMPORT_REPORT,
    202: OpenApiResponse(
        inline_serializer("ImportAccepted", {"job": IMPORT_JOB}),
        description="Larger than the sync limit: a background job (URL also in Location).",
    ),
    **error_responses(400, *AUTH_ERRORS, 404, 413, 415, 422),
}
MINIMAL_BUNDLE = {
    "format": "memoryai-bundle",
    "version": 1,
    "generator": "example/1",
    "exported_at": "2026-01-05T09:00:00Z",
    "manifest": {
        "scope": "full",
        "embedding_model": "",
        "embedding_dim": 0,
        "counts": {"chunks": 1},
    },
    "chunks": [
        {
            "id": 1,
            "content": "We deploy on Tuesdays.",
            "content_hash": protocol.content_hash("We deploy on Tuesdays."),
            "memory_type": "decision",
            "created_at": "2026-01-05T09:00:00Z",
        }
    ],
}


class _BrainView(APIView):
    permission_classes = [HasScope]


class ExportView(_BrainView):
    required_scopes = {"POST": Scope.BUNDLES_EXPORT}
    parser_classes = [JSONParser]

    @extend_schema(
        summary="Export the team's brain as one bundle",
        request=EXPORT_BODY,
        responses={200: BUNDLE, **error_responses(400, *AUTH_ERRORS)},
        examples=[
            OpenApiExample("Since", value={"scope": "since", "since": "2026-01-01T00:00:00Z"})
        ],
    )
    def post(self, request: Request) -> StreamingHttpResponse:
        body = bundle_export_json(
            team=request_team(request),
            actor=Actor.from_request(request),
            request=_export_request(request),
        )
        response = StreamingHttpResponse(body, content_type="application/json")
        response["Cache-Control"] = "no-store"
        return response


class ExportStreamView(_BrainView):
    required_scopes = {"POST": Scope.BUNDLES_EXPORT}
    parser_classes = [JSONParser]

    @extend_schema(
        summary="Export the team's brain as NDJSON lines (streamed)",
        description="One JSON object per line: a header, the records section by section, "
        "then a trailer with the counts sent and the bundle checksum.",
        request=EXPORT_BODY,
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                OpenApiTypes.STR,
                description="Header, record and trailer lines.",
                examples=[
                    OpenApiExample(
                        "Stream",
                        value='{"kind":"header","format":"memoryai-bundle","version":1,…}\n'
                        '{"kind":"chunks","record":{…}}\n'
                        '{"kind":"trailer","counts":{…},"counts_match":true,"checksum":"…"}\n',
                    )
                ],
            ),
            **error_responses(400, *AUTH_ERRORS),
        },
    )
    def post(self, request: Request) -> StreamingHttpResponse:
        lines = bundle_export_stream(
            team=request_team(request),
            actor=Actor.from_request(request),
            request=_export_request(request),
        )
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
        response["Cache-Control"] = "no-store"
        return response


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
            status, body = run_import(team=team, actor=actor, spooled=spooled, options=options)
        return _import_response(status, body)


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
        status = 500
        try:
            with import_failures_audited(team=team, actor=actor):
                status, body = self._import(request, team, actor)
        finally:
            # Refused, failed or imported: the scratch file goes, unless a job now owns it.
            if status != 202:
                self.upload_handler.discard()
        return _import_response(status, body)

    def _import(self, request: Request, team: Team, actor: Actor) -> tuple[int, dict[str, Any]]:
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
        return run_import(
            team=team, actor=actor, spooled=spooled, options=options, filename=upload.name or ""
        )


def _import_response(status: int, body: dict[str, Any]) -> Response:
    headers = {"Location": body["job"]["url"]} if status == 202 else None
    return Response(body, status=status, headers=headers)


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


class SpecView(APIView):
    authentication_classes: list = []
    permission_classes = [permissions.AllowAny]

    @extend_schema(
        summary="This server's MemoryAI protocol description (no token needed)",
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        return Response(
            server_spec(
                max_bytes=settings.BUNDLE_MAX_BYTES,
                sync_max_bytes=settings.BUNDLE_SYNC_IMPORT_MAX_BYTES,
            )
        )
