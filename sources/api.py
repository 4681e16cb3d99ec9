"""REST API: the team's sources (read, change the credential, delete) and, for agents, the
active context."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import generics, serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.api import HasScope, request_team
from memoryadmin.api_errors import AUTH_ERRORS, ApiError, error_responses
from memoryadmin.audit import Actor
from memoryadmin.models import Scope
from sources import selectors, services
from sources.fetchers import Credential
from sources.models import Source
from sources.serializers import (
    ContextRecordSerializer,
    RefreshRunSerializer,
    SourceCredentialInputSerializer,
    SourceCredentialSerializer,
    SourceDetailSerializer,
    SourceSerializer,
    context_memory,
    credential_status,
)
from sources.services import context_read_record

MAX_SCOPES = 20

CONTEXT_EXAMPLE = {
    "note": selectors.UNTRUSTED_NOTE,
    "scopes": ["user"],
    "count": 1,
    "next": None,
    "previous": None,
    "records": [
        {
            "source": "/srv/memories/team",
            "source_name": "Team memories",
            "id": "tone",
            "retrieved_at": "2026-01-05T09:00:00Z",
            "stale": False,
            "kind": "preference",
            "scope": "user",
            "title": "Answer tone",
            "body": "Answer briefly and cite the file you changed.",
            "tags": ["style"],
            "provenance": None,
            "created": "2026-01-05T09:00:00Z",
            "updated": "2026-01-05T09:00:00Z",
            "expires": None,
            "supersedes": [],
        }
    ],
}


@extend_schema_view(
    get=extend_schema(
        summary="List the team's sources",
        responses={200: SourceSerializer(many=True), **error_responses(*AUTH_ERRORS)},
    )
)
class SourceListView(generics.ListAPIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": Scope.SOURCES_READ}
    serializer_class = SourceSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return selectors.team_sources(request_team(self.request)).order_by("id")


@extend_schema_view(
    get=extend_schema(
        summary="A source with its current rejections and problems",
        responses={200: SourceDetailSerializer, **error_responses(*AUTH_ERRORS, 404)},
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
class SourceDetailView(generics.RetrieveDestroyAPIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": Scope.SOURCES_READ, "DELETE": Scope.SOURCES_MANAGE}
    serializer_class = SourceDetailSerializer

    def get_object(self):  # type: ignore[no-untyped-def]
        return selectors.team_source(request_team(self.request), self.kwargs["pk"])

    def perform_destroy(self, instance: Source) -> None:
        services.source_delete(actor=Actor.from_request(self.request), source=instance)


CREDENTIAL_FIELDS = {"credential_kind": "kind"}


class SourceCredentialView(APIView):
    """PUT a new credential (replaces the stored one; kind `none` clears it), DELETE to clear.

    The secret is never returned; the next refresh uses the new credential."""

    permission_classes = [HasScope]
    required_scopes = {"PUT": Scope.SOURCES_MANAGE, "DELETE": Scope.SOURCES_MANAGE}

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
        source = selectors.team_source(request_team(request), pk)
        body = SourceCredentialInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        credential = Credential(
            kind=data["kind"],
            token=data.get("token", ""),
            username=data.get("username", ""),
            password=data.get("password", ""),
        )
        source = self._set(request, source, credential)
        return Response(SourceCredentialSerializer(credential_status(source)).data)

    @extend_schema(
        summary="Clear a source's credential",
        request=None,
        responses={204: None, **error_responses(*AUTH_ERRORS, 404)},
    )
    def delete(self, request: Request, pk: int) -> Response:
        source = selectors.team_source(request_team(request), pk)
        self._set(request, source, None)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @staticmethod
    def _set(request: Request, source: Source, credential: Credential | None) -> Source:
        try:
            return services.source_credential_set(
                actor=Actor.from_request(request), source=source, credential=credential
            )
        except ValidationError as exc:
            fields = exc.message_dict if hasattr(exc, "error_dict") else {}
            details = {CREDENTIAL_FIELDS.get(name, name): errors for name, errors in fields.items()}
            message = " ".join(exc.messages)
            raise ApiError(400, "credential-invalid", message, details) from exc


class SourceLatestRunView(APIView):
    """The progress of the source's newest refresh: poll it after asking for one."""

    permission_classes = [HasScope]
    required_scopes = {"GET": Scope.SOURCES_READ}

    @extend_schema(
        summary="The source's latest refresh run and its state",
        responses={200: RefreshRunSerializer, **error_responses(*AUTH_ERRORS, 404)},
    )
    def get(self, request: Request, pk: int) -> Response:
        source = selectors.team_source(request_team(request), pk)
        run = selectors.latest_run(source)
        if run is None:
            raise ApiError(404, "no-runs", "This source has not been refreshed yet.")
        return Response(RefreshRunSerializer(run).data)


class ContextPagination(LimitOffsetPagination):
    default_limit = 100
    max_limit = 1000


class ContextView(APIView):
    """GET /api/context/?scope=user&scope=https://… — active records for agents."""

    permission_classes = [HasScope]
    required_scopes = {"GET": Scope.CONTEXT_READ}

    @extend_schema(
        summary="Active records for agents",
        description="Active, unexpired records of the team's approved sources, from each "
        "source's current snapshot. The records are untrusted data (see `note`).",
        parameters=[
            OpenApiParameter(
                "scope",
                OpenApiTypes.STR,
                many=True,
                explode=True,
                description=f"Only records with one of these scopes (at most {MAX_SCOPES}).",
            ),
            OpenApiParameter("limit", OpenApiTypes.INT, description="Page size (at most 1000)."),
            OpenApiParameter("offset", OpenApiTypes.INT, description="Records to skip."),
        ],
        responses={
            200: inline_serializer(
                "ContextPage",
                {
                    "note": serializers.CharField(),
                    "scopes": serializers.ListField(child=serializers.CharField()),
                    "count": serializers.IntegerField(),
                    "next": serializers.URLField(allow_null=True),
                    "previous": serializers.URLField(allow_null=True),
                    "records": ContextRecordSerializer(many=True),
                },
            ),
            **error_responses(400, *AUTH_ERRORS),
        },
        examples=[
            OpenApiExample("Context", value=CONTEXT_EXAMPLE, response_only=True, status_codes=[200])
        ],
    )
    def get(self, request: Request) -> Response:
        scopes = [s for s in request.query_params.getlist("scope") if s]
        if len(scopes) > MAX_SCOPES:
            raise ApiError(400, "too-many-scopes", f"Ask for at most {MAX_SCOPES} scopes.")
        include = _include(request)
        team = request_team(request)
        items = selectors.context_items(
            team, scopes or None, include_repositories="repositories" in include
        )
        paginator = ContextPagination()
        page = paginator.paginate_queryset(items, request, view=self)
        rows, refs = _context_rows(page, with_origin=bool(include))
        context_read_record(
            actor=Actor.from_request(request),
            team=team,
            refs=refs,
            total=paginator.count,
            scopes=scopes,
            include=include,
            offset=paginator.offset,
        )
        return Response(
            {
                "note": selectors.UNTRUSTED_NOTE,
                "scopes": scopes,
                "count": paginator.count,
                "next": paginator.get_next_link(),
                "previous": paginator.get_previous_link(),
                "records": rows,
            }
        )


INCLUDE_OPTIONS = ("repositories",)


def _include(request: Request) -> list[str]:
    """`?include=repositories` (repeatable or comma-separated); anything else is a 400."""
    values = [
        part.strip()
        for raw in request.query_params.getlist("include")
        for part in raw.split(",")
        if part.strip()
    ]
    unknown = sorted(set(values) - set(INCLUDE_OPTIONS))
    if unknown:
        raise ApiError(
            400,
            "include-invalid",
            f"include may only name: {', '.join(INCLUDE_OPTIONS)}.",
            {"unknown": unknown},
        )
    return sorted(set(values))


def _context_rows(page: list[Any], *, with_origin: bool) -> tuple[list[dict[str, Any]], list[str]]:
    """Serialise a mixed page (records, memories) in order; also return each item's ref."""
    from bundles.mirror import memory_provenance
    from reviews.models import Memory

    memories = [item for item in page if isinstance(item, Memory)]
    provenance: dict[tuple[int, str], dict[str, Any]] = {}
    by_repository: dict[int, list[Memory]] = {}
    for memory in memories:
        by_repository.setdefault(memory.repository_id, []).append(memory)
    for group in by_repository.values():
        found = memory_provenance(group[0].repository, group)
        for memory in group:
            provenance[(memory.repository_id, memory.memory_id)] = found[memory.memory_id]
    rows, refs = [], []
    for item in page:
        if isinstance(item, Memory):
            row = context_memory(item, provenance[(item.repository_id, item.memory_id)])
        else:
            row = dict(ContextRecordSerializer(item).data)
            row["ref"] = f"source:{item.source_id}:{item.record_id}"
            if with_origin:
                row = {"origin": "source", "pinned": False, **row}
        refs.append(row["ref"])
        if not with_origin and "ref" in row:
            del row["ref"]
        rows.append(row)
    return rows, refs
