"""REST API: the team's members (list, change role, remove) and invitations (list, create, revoke).

Both need the `team:manage` scope (an admin's role for a signed-in user); the lists take the
same filters as the members and invitations pages (one FilterSet each)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memoryadmin import invitations, services
from memoryadmin.api import HasScope, TeamFilterBackend, request_team
from memoryadmin.api_errors import AUTH_ERRORS, error_responses
from memoryadmin.api_views import CreateByService, DestroyByService, ShownOnce, UpdateByService
from memoryadmin.filters import InvitationFilterSet, MemberFilterSet
from memoryadmin.member_views import invite_link
from memoryadmin.models import Invitation, Membership, Role, Scope

MANAGE = {"*": Scope.TEAM_MANAGE}


class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    name = serializers.CharField(source="user.get_full_name", read_only=True)
    email = serializers.CharField(source="user.email", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "username", "name", "email", "role", "created_at"]
        read_only_fields = ["id", "created_at"]


class MemberRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)


class InvitationSerializer(serializers.ModelSerializer):
    state = serializers.CharField(read_only=True)
    invited_by = serializers.CharField(
        source="invited_by.username", read_only=True, default=None, allow_null=True
    )
    accepted_by = serializers.CharField(
        source="accepted_by.username", read_only=True, default=None, allow_null=True
    )

    class Meta:
        model = Invitation
        fields = [
            "id",
            "email",
            "role",
            "state",
            "invited_by",
            "created_at",
            "expires_at",
            "accepted_by",
            "accepted_at",
            "revoked_at",
        ]
        read_only_fields = fields


class InvitationCreateSerializer(serializers.Serializer):
    email = serializers.EmailField(max_length=254)
    role = serializers.ChoiceField(choices=Role.choices)


class InvitationCreatedSerializer(InvitationSerializer):
    link = serializers.CharField(read_only=True, help_text="The accept link; shown this once.")

    class Meta(InvitationSerializer.Meta):
        fields = [*InvitationSerializer.Meta.fields, "link"]
        read_only_fields = fields


@extend_schema_view(
    get=extend_schema(
        summary="List the team's members",
        responses={200: MemberSerializer(many=True), **error_responses(*AUTH_ERRORS, 400)},
    )
)
class MemberList(generics.ListAPIView):
    permission_classes = [HasScope]
    required_scopes = MANAGE
    serializer_class = MemberSerializer
    queryset = Membership.objects.none()  # the schema's model; get_queryset is the team's
    filter_backends = [TeamFilterBackend]
    filterset_class = MemberFilterSet  # the members page's

    def get_queryset(self):  # type: ignore[no-untyped-def]
        team = request_team(self.request)
        return Membership.objects.filter(team=team).select_related("user").order_by("id")


@extend_schema_view(
    patch=extend_schema(
        summary="Change a member's role",
        description="A demotion narrows the member's personal tokens and revokes none. 400 "
        "when it would leave the team without an admin.",
        request=MemberRoleSerializer,
        responses={200: MemberSerializer, **error_responses(*AUTH_ERRORS, 400, 404)},
    ),
    delete=extend_schema(
        summary="Remove a member",
        description="Ends their access to the team; their personal tokens on this team are "
        "revoked in the same transaction (a `token.revoke` event each, reason "
        "`member-removed`). 400 for the last admin.",
        responses={204: None, **error_responses(*AUTH_ERRORS, 400, 404)},
    ),
)
class MemberDetail(UpdateByService, DestroyByService, generics.GenericAPIView):
    required_scopes = MANAGE
    serializer_class = MemberSerializer
    team_objects = Membership
    update_input = MemberRoleSerializer
    update_partial = False  # the role is the one thing to change

    def team_queryset(self):  # type: ignore[no-untyped-def]
        return super().team_queryset().select_related("user")

    @extend_schema(
        summary="One member",
        responses={200: MemberSerializer, **error_responses(*AUTH_ERRORS, 404)},
    )
    def get(self, request: Request, pk: int) -> Response:
        return self.answer(self.team_object())

    def update(self, membership: Membership, data: dict[str, Any]) -> Membership:
        return services.membership_set(
            actor=self.actor, team=membership.team, user=membership.user, role=data["role"]
        )

    def destroy(self, membership: Membership) -> None:
        services.membership_remove(actor=self.actor, membership=membership)


@extend_schema_view(
    get=extend_schema(
        summary="List the team's invitations",
        responses={200: InvitationSerializer(many=True), **error_responses(*AUTH_ERRORS, 400)},
    ),
    post=extend_schema(
        summary="Invite someone by e-mail",
        description="E-mails the accept link and answers it once, in `link` (only its hash is "
        "stored). 409 `invitation-pending` when the address has a pending invitation, "
        "`already-member` when it belongs to a member.",
        request=InvitationCreateSerializer,
        responses={201: InvitationCreatedSerializer, **error_responses(*AUTH_ERRORS, 400, 409)},
        examples=[
            OpenApiExample(
                "Invite a reviewer",
                value={"email": "rita@example.com", "role": "reviewer"},
                request_only=True,
            )
        ],
    ),
)
class InvitationList(CreateByService, generics.ListAPIView):
    required_scopes = MANAGE
    serializer_class = InvitationSerializer
    queryset = Invitation.objects.none()  # the schema's model; get_queryset is the team's
    filter_backends = [TeamFilterBackend]
    filterset_class = InvitationFilterSet  # the invitations page's
    create_input = InvitationCreateSerializer
    create_output = InvitationCreatedSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return (
            Invitation.objects.filter(team=self.team)
            .select_related("invited_by", "accepted_by")
            .order_by("-created_at", "-id")
        )

    def create(self, data: dict[str, Any]) -> ShownOnce:
        invitation, link = invitations.invitation_create(
            actor=self.actor,
            team=self.team,
            email=data["email"],
            role=data["role"],
            link=invite_link(self.request),
        )
        return ShownOnce(invitation, {"link": link})


@extend_schema_view(
    delete=extend_schema(
        summary="Revoke a pending invitation",
        description="Its link stops working. 409 `invitation-accepted`, `invitation-revoked` "
        "or `invitation-expired` when it is not pending.",
        responses={204: None, **error_responses(*AUTH_ERRORS, 404, 409)},
    ),
)
class InvitationDetail(DestroyByService, generics.GenericAPIView):
    required_scopes = MANAGE
    serializer_class = InvitationSerializer
    team_objects = Invitation

    @extend_schema(
        summary="One invitation",
        responses={200: InvitationSerializer, **error_responses(*AUTH_ERRORS, 404)},
    )
    def get(self, request: Request, pk: int) -> Response:
        return self.answer(self.team_object())

    def destroy(self, invitation: Invitation) -> None:
        invitations.invitation_revoke(actor=self.actor, invitation=invitation)
