"""REST API: add, test, change, approve and disable a source (the routes: api.py).

On the shared write-view base (memoryadmin.api_views) like the members, invitations, webhooks
and repositories APIs: the team's source from the URL, the body validated, one service call."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.api_errors import AUTH_ERRORS, error_responses
from memoryadmin.api_views import CreateByService, TeamWriteView, UpdateByService
from memoryadmin.models import Scope
from sources import selectors
from sources.fetchers import Credential
from sources.models import Health, Source
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


def credential_from(data: dict[str, Any] | None) -> Credential | None:
    """The service's Credential from a validated credential body (None: none given)."""
    if not data:
        return None
    return Credential(
        kind=data["kind"],
        token=data.get("token", ""),
        username=data.get("username", ""),
        password=data.get("password", ""),
    )


class SourceView(TeamWriteView):
    # Mixin: the request's team's sources, looked up by the URL's pk (404 for another team's).

    team_objects = Source
    serializer_class = SourceSerializer

    def team_object(self) -> Source:
        return selectors.team_source(self.team, self.kwargs[self.object_kwarg])


class SourceCreate(CreateByService, SourceView):
    # POST /api/sources/: add (pending) and, when a name is given, name it — one transaction.

    create_input = SourceAddInputSerializer

    @transaction.atomic
    def create(self, data: dict[str, Any]) -> Source:
        source = lifecycle.source_add(
            actor=self.actor,
            team=self.team,
            location=data["location"],
            credential=credential_from(data.get("credential")),
            refresh_interval=timedelta(minutes=data["refresh_minutes"]),
        )
        if data["name"].strip():
            source = edit.source_update(actor=self.actor, source=source, name=data["name"])
        return source


class SourceUpdate(UpdateByService, SourceView):
    # PATCH /api/sources/<pk>/: name and refresh interval; answers the detail representation.

    update_input = SourceUpdateInputSerializer
    update_output = SourceDetailSerializer

    def update(self, source: Source, data: dict[str, Any]) -> Source:
        minutes = data.get("refresh_minutes")
        source = edit.source_update(
            actor=self.actor,
            source=source,
            name=data.get("name"),
            refresh_interval=timedelta(minutes=minutes) if minutes is not None else None,
        )
        return selectors.team_source(source.team, source.pk)


class SourceTestView(SourceView, APIView):
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
            actor=self.actor,
            team=self.team,
            location=body.validated_data["location"],
            credential=credential_from(body.validated_data.get("credential")),
        )
        return Response({"entries": len(manifest.entries), "rejected": len(manifest.rejected)})


class SourceStateView(SourceView, APIView):
    """POST approves or disables (the URL says which)."""

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
        source = self.team_object()
        if self.transition == "approve":
            source = lifecycle.source_approve(actor=self.actor, source=source)
        else:
            source = lifecycle.source_disable(actor=self.actor, source=source)
        data = dict(SourceSerializer(source).data)
        data["warnings"] = [NEVER_READ] if source.health == Health.FAILED else []
        return Response(data)
