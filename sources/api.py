"""REST API: the team's sources (read, change the credential, delete; writes: api_admin)."""

from __future__ import annotations

from drf_spectacular.utils import (
    OpenApiExample,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.api import TeamFilterBackend
from memoryadmin.api_errors import AUTH_ERRORS, ApiError, error_responses
from memoryadmin.api_views import DestroyByService
from memoryadmin.models import Scope
from sources import selectors
from sources.api_admin import SourceCreate, SourceUpdate, SourceView, credential_from
from sources.fetchers import Credential
from sources.filters import RecordFilterSet, SourceFilterSet
from sources.models import Health, Record, Source
from sources.serializers import (
    RefreshRunSerializer,
    SourceAddInputSerializer,
    SourceCredentialInputSerializer,
    SourceCredentialSerializer,
    SourceDetailSerializer,
    SourceSerializer,
    SourceUpdateInputSerializer,
    credential_status,
)
from sources.services.lifecycle import source_credential_set, source_delete


@extend_schema_view(
    get=extend_schema(
        summary="List the team's sources",
        responses={200: SourceSerializer(many=True), **error_responses(*AUTH_ERRORS, 400)},
    ),
    post=extend_schema(
        summary="Add a source",
        description="Registers the source as pending and queues a preview read; nothing is "
        "served until it is approved (`POST /api/sources/{id}/approve/`). Only https:// URLs "
        "(plain http:// to a loopback host only with the development setting) and absolute "
        "folders inside the allowed roots. Test a location first with "
        "`POST /api/sources/test/`.",
        request=SourceAddInputSerializer,
        responses={201: SourceSerializer, **error_responses(400, *AUTH_ERRORS)},
        examples=[
            OpenApiExample(
                "HTTPS with a bearer token",
                value={
                    "location": "https://memories.example.org/team/",
                    "name": "Team notes",
                    "refresh_minutes": 60,
                    "credential": {"kind": "bearer", "token": "s3cret"},
                },
                request_only=True,
            )
        ],
    ),
)
class SourceListView(SourceCreate, generics.ListAPIView):
    required_scopes = {"GET": Scope.SOURCES_READ, "POST": Scope.SOURCES_MANAGE}
    serializer_class = SourceSerializer
    error_fields = {"credential_kind": "credential"}
    queryset = Source.objects.none()  # the schema's model; get_queryset is the team's
    filter_backends = [TeamFilterBackend]
    filterset_class = SourceFilterSet  # the sources page's

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return selectors.team_sources(self.team).order_by("id")


@extend_schema_view(
    get=extend_schema(
        summary="A source with its current rejections and problems",
        responses={200: SourceDetailSerializer, **error_responses(*AUTH_ERRORS, 404)},
    ),
    patch=extend_schema(
        summary="Change a source's name or refresh interval",
        description="Either field; what is left out stays. The location is the records' "
        "identity and cannot change (add the new one, delete the old). The credential has its "
        "own route.",
        request=SourceUpdateInputSerializer,
        responses={200: SourceDetailSerializer, **error_responses(400, *AUTH_ERRORS, 404)},
    ),
    delete=extend_schema(
        summary="Delete a source",
        description="Removes the source with its snapshots, records and refresh runs, and "
        "withdraws its records from the brain in the same transaction (chunks only it backed "
        "stop being served). The audit log keeps a `source.delete` event with its URL or path. "
        "A refresh still running for it ends without effect.",
        responses={204: None, **error_responses(*AUTH_ERRORS, 404)},
    ),
)
class SourceDetailView(SourceUpdate, DestroyByService, generics.RetrieveAPIView):
    required_scopes = {
        "GET": Scope.SOURCES_READ,
        "PATCH": Scope.SOURCES_MANAGE,
        "DELETE": Scope.SOURCES_MANAGE,
    }
    serializer_class = SourceDetailSerializer

    def get_object(self) -> Source:
        return self.team_object()

    def destroy(self, source: Source) -> None:
        source_delete(actor=self.actor, source=source)


class SourceCredentialView(SourceView, APIView):
    """PUT a new credential (replaces the stored one; kind `none` clears it), DELETE to clear.

    The secret is never returned; the next refresh uses the new credential."""

    required_scopes = {"PUT": Scope.SOURCES_MANAGE, "DELETE": Scope.SOURCES_MANAGE}
    error_fields = {"credential_kind": "kind"}  # the service's (and form's) name, this body's

    @extend_schema(
        summary="Replace or clear a source's credential",
        description="`bearer` needs `token`; `basic` needs `username` (and usually "
        "`password`); `none` clears the stored credential. Stored encrypted, never shown "
        "back: the answer says only whether one is set, its kind and when it changed. The "
        "next refresh uses it (a source denied by 401/403 recovers on its next successful "
        "refresh); local directory sources take no credential (400 `credential-invalid`).",
        request=SourceCredentialInputSerializer,
        responses={
            200: SourceCredentialSerializer,
            **error_responses(400, *AUTH_ERRORS, 404),
        },
        examples=[
            OpenApiExample(
                "Bearer token",
                value={"kind": "bearer", "token": "s3cret"},
                request_only=True,
            ),
            OpenApiExample(
                "Set",
                value={"kind": "bearer", "set": True, "changed_at": "2026-01-05T09:00:00Z"},
                response_only=True,
                status_codes=[200],
            ),
        ],
    )
    def put(self, request: Request, pk: int) -> Response:
        source = self.team_object()
        credential = credential_from(self.body(SourceCredentialInputSerializer))
        source = self._set(source, credential)
        return Response(SourceCredentialSerializer(credential_status(source)).data)

    @extend_schema(
        summary="Clear a source's credential",
        request=None,
        responses={204: None, **error_responses(*AUTH_ERRORS, 404)},
    )
    def delete(self, request: Request, pk: int) -> Response:
        self._set(self.team_object(), None)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _set(self, source: Source, credential: Credential | None) -> Source:
        return source_credential_set(actor=self.actor, source=source, credential=credential)


class RecordSerializer(serializers.ModelSerializer):
    class Meta:
        model = Record
        fields = [
            "record_id",
            "kind",
            "scope",
            "title",
            "path",
            "tags",
            "created",
            "updated",
            "expires",
        ]


@extend_schema_view(
    get=extend_schema(
        summary="A source's active records, as its page lists them",
        description="The records the source serves now (expiry applied at the time of the "
        "request), with the source page's filters (`q`, `kind`, `scope`, `sort`) and "
        "`limit`/`offset`; a bad value is 400 `invalid-filter`. Empty while the source was "
        "never read or is denied (401/403): its page shows no records then either. The "
        "records' text, for agents: `GET /api/context/`.",
        responses={200: RecordSerializer(many=True), **error_responses(*AUTH_ERRORS, 400, 404)},
    )
)
class SourceRecordsView(SourceView, generics.ListAPIView):
    required_scopes = {"GET": Scope.SOURCES_READ}
    serializer_class = RecordSerializer
    queryset = Record.objects.none()  # the schema's model; get_queryset is the source's
    filter_backends = [TeamFilterBackend]
    filterset_class = RecordFilterSet  # the source page's

    def get_queryset(self):  # type: ignore[no-untyped-def]
        source = self.team_object()
        if source.current_snapshot_id is None or source.health == Health.DENIED:
            return Record.objects.none()
        return selectors.active_records(source).defer("body", "provenance", "extensions")


class SourceLatestRunView(SourceView, APIView):
    """The progress of the source's newest refresh: poll it after asking for one."""

    required_scopes = {"GET": Scope.SOURCES_READ}

    @extend_schema(
        summary="The source's latest refresh run and its state",
        responses={200: RefreshRunSerializer, **error_responses(*AUTH_ERRORS, 404)},
    )
    def get(self, request: Request, pk: int) -> Response:
        run = selectors.latest_run(self.team_object())
        if run is None:
            raise ApiError(404, "no-runs", "This source has not been refreshed yet.")
        return Response(RefreshRunSerializer(run).data)
