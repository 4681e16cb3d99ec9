"""The team's API tokens over REST (scope `team:manage`): list, create (the secret is in the
answer once), revoke. The same services as the Tokens page (memoryadmin.tokens)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin import tokens as token_services
from memoryadmin.api import TeamFilterBackend
from memoryadmin.api_errors import AUTH_ERRORS, error_responses
from memoryadmin.api_views import CreateByService, ShownOnce, TeamWriteView
from memoryadmin.filters import TokenFilterSet
from memoryadmin.models import ApiToken, Scope


class TokenSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    state = serializers.SerializerMethodField()

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "kind",
            "prefix",
            "scopes",
            "created_by",
            "created_at",
            "expires_at",
            "revoked_at",
            "last_used_at",
            "state",
        ]

    def get_state(self, token: ApiToken) -> str:
        if token.revoked_at is not None:
            return "revoked"
        return "expired" if token.is_expired else "active"


class TokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=Scope.choices), allow_empty=False, max_length=20
    )
    expires_days = serializers.IntegerField(
        min_value=1, max_value=3650, required=False, allow_null=True
    )


class TokenCreatedSerializer(TokenSerializer):
    secret = serializers.CharField(help_text="The token itself: shown in this answer only.")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "secret"]


@extend_schema_view(
    post=extend_schema(
        summary="Create an API token (its secret is shown once)",
        description="A signed-in admin's token is personal; a token with `team:manage` creates "
        "a token of its own kind for its own person and can grant only scopes it holds "
        "itself (403 `scope-beyond-token`). The answer carries `secret`, the only time it "
        "exists in clear.",
        request=TokenCreateSerializer,
        responses={201: TokenCreatedSerializer, **error_responses(400, *AUTH_ERRORS)},
    ),
)
class TokenListView(CreateByService, generics.ListAPIView):
    required_scopes = {"GET": Scope.TEAM_MANAGE, "POST": Scope.TEAM_MANAGE}
    serializer_class = TokenSerializer
    create_input = TokenCreateSerializer
    queryset = ApiToken.objects.none()  # the schema's model; get_queryset is the team's
    filter_backends = [TeamFilterBackend]
    filterset_class = TokenFilterSet  # the Tokens page's
    pagination_class = None  # a team has few tokens: the answer stays one list

    @extend_schema(
        summary="The team's API tokens",
        description="Every token of the team, newest first: never a secret nor its hash. "
        "Takes the Tokens page's filters (`q`, `state`, `kind`, `scope`, `after`, `before`, "
        "`sort`); a bad value is 400 `invalid-filter`.",
        responses={200: TokenSerializer(many=True), **error_responses(*AUTH_ERRORS, 400)},
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.list(request, *args, **kwargs)

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return ApiToken.objects.filter(team=self.team).select_related("created_by")

    def create(self, data: dict[str, Any]) -> ShownOnce:
        token, secret = token_services.token_create(
            actor=self.actor,
            team=self.team,
            name=data["name"],
            scopes=data["scopes"],
            expires_days=data.get("expires_days"),
        )
        return ShownOnce(token, {"secret": secret})


class TokenDetailView(TeamWriteView, APIView):
    required_scopes = {"DELETE": Scope.TEAM_MANAGE}
    serializer_class = TokenSerializer
    team_objects = ApiToken
    object_kwarg = "token_id"

    @extend_schema(
        summary="Revoke an API token",
        description="From now on the token gets 401 `token-revoked` everywhere (REST and "
        "/mcp). Revoking a revoked token changes nothing.",
        responses={200: TokenSerializer, **error_responses(404, *AUTH_ERRORS)},
    )
    def delete(self, request: Request, token_id: int) -> Response:
        token = token_services.token_revoke(actor=self.actor, token=self.team_object())
        return self.answer(token)
