"""GET /api/brain/embeddings/: which vector backend serves the team and how far embedding got."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from bundles.embeddings.lifecycle import embedding_status
from memoryadmin.api import HasScope, request_team
from memoryadmin.api_errors import AUTH_ERRORS, error_responses
from memoryadmin.models import Scope


class EmbeddingStatusView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": Scope.CONTEXT_READ}

    @extend_schema(
        summary="The team's embeddings: backend, model and progress",
        description="`backend` is `pgvector` (PostgreSQL with the extension: HNSW index) or "
        "`exact scan`; `embedded` of `total` live chunks hold a vector of the team's `model` "
        "(the rest are embedded in the background). `enabled` is false where the server runs "
        "keyword search only; `text` says it in one line.",
        responses={
            200: inline_serializer(
                "EmbeddingStatus",
                {
                    "enabled": serializers.BooleanField(),
                    "backend": serializers.CharField(),
                    "model": serializers.CharField(),
                    "dim": serializers.IntegerField(),
                    "embedded": serializers.IntegerField(),
                    "total": serializers.IntegerField(),
                    "text": serializers.CharField(),
                },
            ),
            **error_responses(*AUTH_ERRORS),
        },
    )
    def get(self, request: Request) -> Response:
        return Response(embedding_status(request_team(request)))
