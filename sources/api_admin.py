"""REST API: add, test, change, approve and disable a source (reading and deleting: api.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.api import HasScope, request_team
from memoryadmin.api_errors import AUTH_ERRORS, error_responses
from memoryadmin.audit import Actor
from memoryadmin.models import Scope
from sources import selectors
from sources.fetchers import Credential
from sources.models import Health
from sources.serializers import (
    SourceAddInputSerializer,
    SourceDetailSerializer,
    SourceSerializer,
    SourceTestInputSerializer,
    SourceTestSerializer,
    SourceUpdateInputSerializer,
)
from sources.services import edit, lifecycle

NEVER_READ = (
    "This source has never been read successfully: it serves nothing until a refresh succeeds."
)


def _credential(data: dict[str, Any] | None) -> Credential | None:
    if not data:
        return None
    return Credential(
        kind=data["kind"],
        token=data.get("token", ""),
        username=data.get("username", ""),
        password=data.get("password", ""),
    )


def source_create(request: Request) -> Response:
    """POST /api/sources/ (the list view delegates here)."""
    body = SourceAddInputSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    actor = Actor.from_request(request)
    source = lifecycle.source_add(
        actor=actor,
        team=request_team(request),
        location=data["location"],
        credential=_credential(data.get("credential")),
        refresh_interval=timedelta(minutes=data["refresh_minutes"]),
    )
    if data["name"].strip():
        source = edit.source_update(actor=actor, source=source, name=data["name"])
    return Response(SourceSerializer(source).data, status=status.HTTP_201_CREATED)


def source_patch(request: Request, pk: int) -> Response:
    """PATCH /api/sources/<pk>/ (the detail view delegates here)."""
    source = selectors.team_source(request_team(request), pk)
    body = SourceUpdateInputSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    minutes = data.get("refresh_minutes")
    source = edit.source_update(
        actor=Actor.from_request(request),
        source=source,
        name=data.get("name"),
        refresh_interval=timedelta(minutes=minutes) if minutes is not None else None,
    )
    return Response(SourceDetailSerializer(selectors.team_source(source.team, source.pk)).data)


class SourceTestView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"POST": Scope.SOURCES_MANAGE}
    error_fields = {"credential_kind": "credential"}

    @extend_schema(
        summary="Test a location before adding it",
        description="Reads the manifest through the same guards as a refresh (https only; "
        "local folders inside the allowed roots) and saves nothing. A failure is 400 with the "
        "`source-test-failed` whose `details.location` starts with the refresh's own error code, "
        "e.g. `tls-verify-failed` (a private CA: set `SSL_CERT_FILE`), `unreachable`, "
        "`not-found` or `http-error`.",
        request=SourceTestInputSerializer,
        responses={200: SourceTestSerializer, **error_responses(400, *AUTH_ERRORS)},
        examples=[
            OpenApiExample(
                "An HTTPS source",
                value={"location": "https://memories.example.org/team/"},
                request_only=True,
            )
        ],
    )
    def post(self, request: Request) -> Response:
        body = SourceTestInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        manifest = edit.source_test(
            actor=Actor.from_request(request),
            team=request_team(request),
            location=body.validated_data["location"],
            credential=_credential(body.validated_data.get("credential")),
        )
        return Response({"entries": len(manifest.entries), "rejected": len(manifest.rejected)})


class SourceStateView(APIView):
    """POST approves or disables (the URL says which)."""

    permission_classes = [HasScope]
    required_scopes = {"POST": Scope.SOURCES_MANAGE}
    transition = "approve"

    @extend_schema(
        summary="Approve or disable a source",
        description="Approving serves the source's records and queues a refresh; a source "
        "that never read successfully is approved with a `warnings` entry. Disabling stops "
        "its refreshes and withdraws its records from agents and the brain (kept: approve "
        "it again). Doing either twice changes nothing.",
        request=None,
        responses={200: SourceSerializer, **error_responses(*AUTH_ERRORS, 404)},
    )
    def post(self, request: Request, pk: int) -> Response:
        source = selectors.team_source(request_team(request), pk)
        actor = Actor.from_request(request)
        if self.transition == "approve":
            source = lifecycle.source_approve(actor=actor, source=source)
        else:
            source = lifecycle.source_disable(actor=actor, source=source)
        data = dict(SourceSerializer(source).data)
        data["warnings"] = [NEVER_READ] if source.health == Health.FAILED else []
        return Response(data)
