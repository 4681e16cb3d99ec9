"""Core REST endpoints: who the caller is."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, PolymorphicProxySerializer, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.api import request_token
from memoryadmin.api_errors import error_responses
from memoryadmin.models import Membership, Team
from memoryadmin.permissions import token_scopes


class TokenInfoSerializer(serializers.Serializer):
    name = serializers.CharField()
    prefix = serializers.CharField()
    scopes = serializers.ListField(child=serializers.CharField())
    expires_at = serializers.DateTimeField(allow_null=True)
    kind = serializers.ChoiceField(
        choices=["personal", "team"],
        help_text="personal: acts for the person who created it, within their current role;"
        " team: belongs to no person (commits as the bot, never counts as a reviewer).",
    )
    active_scopes = serializers.ListField(
        child=serializers.CharField(),
        help_text="The scopes usable now: of a personal token, those its creator's role allows.",
    )


class MeTokenSerializer(serializers.Serializer):
    team = serializers.SlugField(help_text="The token's team.")
    token = TokenInfoSerializer()


class TeamRoleSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=["admin", "reviewer", "viewer"])


class MeUserSerializer(serializers.Serializer):
    user = serializers.CharField(help_text="The signed-in user's username.")
    is_superuser = serializers.BooleanField()
    teams = TeamRoleSerializer(many=True)


class MeView(APIView):
    """`GET /api/me/`: the token's team and metadata, or the session user and their roles."""

    @extend_schema(
        summary="Who is calling",
        description="With a token: its team, name, prefix, scopes and expiry. "
        "With a browser session: the user and their role in each team.",
        responses={
            200: PolymorphicProxySerializer(
                component_name="Me",
                serializers=[MeTokenSerializer, MeUserSerializer],
                resource_type_field_name=None,
            ),
            **error_responses(401, 429),
        },
        examples=[
            OpenApiExample(
                "Token",
                value={
                    "team": "alpha",
                    "token": {
                        "name": "ci",
                        "prefix": "ma_3f9c",
                        "scopes": ["context:read"],
                        "expires_at": None,
                        "kind": "team",
                        "active_scopes": ["context:read"],
                    },
                },
                response_only=True,
                status_codes=[200],
            )
        ],
    )
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
                    "kind": token.kind,
                    "active_scopes": sorted(token_scopes(token)),
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
