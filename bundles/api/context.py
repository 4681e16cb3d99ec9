"""GET /api/context/: the team's served memory for agents (a token with `context:read`)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from bundles.context import UNTRUSTED_NOTE, context_items, context_memory, context_read_record
from memoryadmin.api import HasScope, request_team
from memoryadmin.api_errors import AUTH_ERRORS, ApiError, error_responses
from memoryadmin.audit import Actor
from memoryadmin.models import Scope
from reviews.models import Memory
from reviews.selectors import memory_provenance
from sources.serializers import ContextRecordSerializer

MAX_SCOPES = 20

CONTEXT_EXAMPLE = {
    "note": UNTRUSTED_NOTE,
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
        items = context_items(team, scopes or None, include_repositories="repositories" in include)
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
                "note": UNTRUSTED_NOTE,
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
