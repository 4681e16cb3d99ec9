"""The team's review repositories, read only."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics

from memoryadmin.api import HasScope, request_team
from memoryadmin.api_errors import AUTH_ERRORS, error_responses
from reviews.api.schemas import READ
from reviews.models import Repository
from reviews.serializers import RepositorySerializer


@extend_schema_view(
    get=extend_schema(
        summary="List the team's review repositories",
        responses={200: RepositorySerializer(many=True), **error_responses(*AUTH_ERRORS)},
    )
)
class RepositoryList(generics.ListAPIView):
    permission_classes = [HasScope]
    required_scopes = READ
    serializer_class = RepositorySerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return Repository.objects.filter(team=request_team(self.request)).order_by("id")


@extend_schema_view(
    get=extend_schema(
        summary="A review repository",
        responses={200: RepositorySerializer, **error_responses(*AUTH_ERRORS, 404)},
    )
)
class RepositoryDetail(generics.RetrieveAPIView):
    permission_classes = [HasScope]
    required_scopes = READ
    serializer_class = RepositorySerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return Repository.objects.filter(team=request_team(self.request))
