"""REST API: the team's sources and, for agents, the active context."""

from __future__ import annotations

from rest_framework import generics
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.api import HasScope, request_team
from memoryadmin.api_errors import ApiError
from memoryadmin.models import Scope
from sources import selectors
from sources.serializers import ContextRecordSerializer, SourceDetailSerializer, SourceSerializer

MAX_SCOPES = 20


class SourceListView(generics.ListAPIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": Scope.SOURCES_READ}
    serializer_class = SourceSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return selectors.team_sources(request_team(self.request)).order_by("id")


class SourceDetailView(generics.RetrieveAPIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": Scope.SOURCES_READ}
    serializer_class = SourceDetailSerializer

    def get_object(self):  # type: ignore[no-untyped-def]
        return selectors.team_source(request_team(self.request), self.kwargs["pk"])


class ContextPagination(LimitOffsetPagination):
    default_limit = 100
    max_limit = 1000


class ContextView(APIView):
    """GET /api/context/?scope=user&scope=https://… — active records for agents."""

    permission_classes = [HasScope]
    required_scopes = {"GET": Scope.CONTEXT_READ}

    def get(self, request: Request) -> Response:
        scopes = [s for s in request.query_params.getlist("scope") if s]
        if len(scopes) > MAX_SCOPES:
            raise ApiError(400, "too-many-scopes", f"Ask for at most {MAX_SCOPES} scopes.")
        records = selectors.context_records(request_team(request), scopes or None)
        paginator = ContextPagination()
        page = paginator.paginate_queryset(records, request, view=self)
        return Response(
            {
                "note": selectors.UNTRUSTED_NOTE,
                "scopes": scopes,
                "count": paginator.count,
                "next": paginator.get_next_link(),
                "previous": paginator.get_previous_link(),
                "records": ContextRecordSerializer(page, many=True).data,
            }
        )
