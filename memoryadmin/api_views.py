"""Core REST endpoints: who the caller is."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.api import request_token
from memoryadmin.models import Membership, Team


class MeView(APIView):
    """`GET /api/me/`: the token's team and metadata, or the session user and their roles."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT}, summary="Who is calling")
    def get(self, request: Request) -> Response:
        token = request_token(request)
        if token is not None:
            body: dict[str, Any] = {
                "team": token.team.slug,
                "token": {
                    "name": token.name,
                    "prefix": token.prefix,
                    "scopes": list(token.scopes),
                    "expires_at": token.expires_at,
                },
            }
            return Response(body)
        user = request.user
        if user.is_superuser:
            teams = [
                {"slug": slug, "name": name, "role": "admin"}
                for slug, name in Team.objects.values_list("slug", "name")
            ]
        else:
            teams = [
                {"slug": slug, "name": name, "role": role}
                for slug, name, role in Membership.objects.filter(user=user)
                .order_by("team__slug")
                .values_list("team__slug", "team__name", "role")
            ]
        return Response(
            {"user": user.get_username(), "is_superuser": user.is_superuser, "teams": teams}
        )
