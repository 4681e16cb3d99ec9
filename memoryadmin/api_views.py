"""Core REST endpoints (who the caller is) and the shared shape of the API's write views.

A write view says only what differs: which body it reads (`create_input`, `update_input`),
which service it calls (`create`, `update`, `destroy`) and how it answers (`serializer_class`,
or `create_output`/`update_output`). The mixins do the rest, the same way everywhere: the
team's object from the URL (404 otherwise), the body validated (400 `invalid` with the field
errors), the service called with the request's actor (its domain errors answer their own codes
through memoryadmin.api_errors), then 201/200 with the representation or 204. A service result
that carries something shown once (a secret, a link) is a `ShownOnce`, answered `no-store`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Model, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, PolymorphicProxySerializer, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.api import HasScope, request_team, request_token
from memoryadmin.api_errors import error_responses
from memoryadmin.audit import Actor
from memoryadmin.models import Membership, Team
from memoryadmin.permissions import token_scopes


@dataclass(frozen=True)
class ShownOnce:
    """A write's object and the fields its answer carries this once (never stored in clear)."""

    instance: Any
    once: dict[str, Any] = field(default_factory=dict)


# The mixins' notes are comments, not docstrings: drf-spectacular would show an inherited
# class docstring as the description of every operation of the views that use them.


class TeamWriteView:
    # Mixin for API views over the request's team: the helpers every write view uses.

    permission_classes = [HasScope]
    # The team's objects the URL's `pk` picks from: a model, or a method returning a queryset.
    team_objects: type[Model] | None = None
    object_kwarg = "pk"  # the URL's name for the object's primary key
    request: Request
    kwargs: dict[str, Any]
    serializer_class: type[serializers.BaseSerializer]

    @property
    def team(self) -> Team:
        return request_team(self.request)

    @property
    def actor(self) -> Actor:
        return Actor.from_request(self.request)

    def team_queryset(self) -> QuerySet[Any]:
        assert self.team_objects is not None, f"{type(self).__name__} sets team_objects"
        return self.team_objects._default_manager.filter(team=self.team)

    def team_object(self) -> Any:
        """The object the URL names, in the request's team: 404 for another team's."""
        return get_object_or_404(self.team_queryset(), pk=self.kwargs[self.object_kwarg])

    def body(self, serializer_class: type[serializers.Serializer], **kwargs: Any) -> dict[str, Any]:
        """The request body validated by `serializer_class` (400 with the field errors)."""
        body = serializer_class(data=self.request.data, **kwargs)
        body.is_valid(raise_exception=True)
        return dict(body.validated_data)

    def answer(
        self,
        result: Any,
        *,
        output: type[serializers.BaseSerializer] | None = None,
        status_code: int = status.HTTP_200_OK,
    ) -> Response:
        """The representation of what the service returned; a `ShownOnce` adds its fields
        and forbids caching the answer."""
        serializer = output or self.serializer_class
        if not isinstance(result, ShownOnce):
            return Response(serializer(result).data, status=status_code)
        response = Response({**serializer(result.instance).data, **result.once}, status_code)
        response["Cache-Control"] = "no-store"  # the answer carries a secret or a link
        return response


class CreateByService(TeamWriteView):
    # POST: validate `create_input`, call `create(data)`, answer 201 with the representation.

    create_input: type[serializers.Serializer]
    create_output: type[serializers.BaseSerializer] | None = None

    def create(self, data: dict[str, Any]) -> Any:
        raise NotImplementedError

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        result = self.create(self.body(self.create_input))
        return self.answer(result, output=self.create_output, status_code=201)


class UpdateByService(TeamWriteView):
    # PATCH: the team's object, `update_input` (partial: what is left out stays), then
    # `update(obj, data)`; 200 with the representation.

    update_input: type[serializers.Serializer]
    update_output: type[serializers.BaseSerializer] | None = None
    update_partial = True

    def update(self, obj: Any, data: dict[str, Any]) -> Any:
        raise NotImplementedError

    def patch(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        obj = self.team_object()
        result = self.update(obj, self.body(self.update_input, partial=self.update_partial))
        return self.answer(result, output=self.update_output)


class DestroyByService(TeamWriteView):
    # DELETE: the team's object, then `destroy(obj)`; 204.

    def destroy(self, obj: Any) -> None:
        raise NotImplementedError

    def delete(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        self.destroy(self.team_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


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
