"""HTTP profile (§4): /v1/brain/export, /v1/brain/export/stream, and /v1/spec."""

from __future__ import annotations

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import permissions
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from bundles.api.schemas import BUNDLE, EXPORT_BODY
from bundles.services.exports import ExportRequest, bundle_export_json, bundle_export_stream
from bundles.spec import server_spec
from formats import memoryai as protocol
from memoryadmin.api import HasScope, request_team
from memoryadmin.api_errors import AUTH_ERRORS, ApiError, error_responses
from memoryadmin.audit import Actor
from memoryadmin.models import Scope


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
