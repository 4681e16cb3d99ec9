"""GET /api/brain/chunks/: the Brain page's chunk list over the API, with the page's FilterSet."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics, serializers

from bundles import selectors
from bundles.filters import ChunkFilterSet
from bundles.models import Chunk
from bundles.secrets import mask_secrets
from memoryadmin.api import HasScope, TeamFilterBackend, request_team
from memoryadmin.api_errors import AUTH_ERRORS, error_responses
from memoryadmin.models import Scope


class ChunkRowSerializer(serializers.Serializer):
    """A chunk as the Brain page lists it: its content masked where a secret rule matched."""

    id = serializers.IntegerField()
    type = serializers.CharField(source="memory_type")
    zone = serializers.CharField()
    origin = serializers.CharField()
    dna = serializers.BooleanField(source="is_dna")
    pinned = serializers.BooleanField(source="is_pinned")
    served = serializers.SerializerMethodField(
        help_text="false: every approval that brought it in was withdrawn (not served)."
    )
    suspicious = serializers.BooleanField(help_text="Looked like prompt injection.")
    secret = serializers.SerializerMethodField(help_text="Looked like a secret (masked).")
    created = serializers.DateTimeField(allow_null=True)
    content = serializers.SerializerMethodField()

    def get_served(self, chunk: Any) -> bool:
        return bool(chunk.standalone or chunk.has_active_origin)

    def get_secret(self, chunk: Any) -> bool:
        return bool(chunk.secret_findings)

    def get_content(self, chunk: Any) -> str:
        return mask_secrets(chunk.content, chunk.secret_findings)


@extend_schema_view(
    get=extend_schema(
        summary="The brain's chunks, as the Brain page lists them",
        description="Live chunks, newest first, with the Brain page's filters (`q`, `type`, "
        "`zone`, `origin`, `flag`, `after`, `before`, `sort`) and `limit`/`offset`; a bad "
        "value is 400 `invalid-filter`. Content that looked like a secret is masked, as on "
        "the page. The whole brain as a bundle: `POST /v1/brain/export`.",
        responses={200: ChunkRowSerializer(many=True), **error_responses(*AUTH_ERRORS, 400)},
    )
)
class ChunkListView(generics.ListAPIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": Scope.BUNDLES_EXPORT}  # what an export of the brain needs
    serializer_class = ChunkRowSerializer
    queryset = Chunk.objects.none()  # the schema's model; get_queryset is the team's
    filter_backends = [TeamFilterBackend]
    filterset_class = ChunkFilterSet  # the Brain page's

    def get_queryset(self):  # type: ignore[no-untyped-def]
        # The page's rows without the origins' names (the page's prefetch): one query a page.
        return selectors.chunk_rows(request_team(self.request)).prefetch_related(None)
