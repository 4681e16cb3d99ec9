"""REST API: the team's members (list, change role, remove) and invitations (list, create, revoke).

Both need the `team:manage` scope (an admin's role for a signed-in user); the lists take the
same filters as the members and invitations pages (one FilterSet each)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from memoryadmin import invitations, services
from memoryadmin.api import HasScope, TeamFilterBackend, request_team
from memoryadmin.api_errors import AUTH_ERRORS, error_responses
from memoryadmin.audit import Actor
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


class MemberDetail(generics.GenericAPIView):
    permission_classes = [HasScope]
    required_scopes = MANAGE
    serializer_class = MemberSerializer

    def get_object(self) -> Membership:  # type: ignore[override]
        team = request_team(self.request)
        return get_object_or_404(
            Membership.objects.select_related("user"), pk=self.kwargs["pk"], team=team
        )

    @extend_schema(
        summary="One member",
        responses={200: MemberSerializer, **error_responses(*AUTH_ERRORS, 404)},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(MemberSerializer(self.get_object()).data)

    @extend_schema(
        summary="Change a member's role",
        description="A demotion narrows the member's personal tokens and revokes none. 400 "
        "when it would leave the team without an admin.",
        request=MemberRoleSerializer,
        responses={200: MemberSerializer, **error_responses(*AUTH_ERRORS, 400, 404)},
    )
    def patch(self, request: Request, pk: int) -> Response:
        membership = self.get_object()
        body = MemberRoleSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        membership = services.membership_set(
            actor=Actor.from_request(request),
            team=membership.team,
            user=membership.user,
            role=body.validated_data["role"],
        )
        return Response(MemberSerializer(membership).data)

    @extend_schema(
        summary="Remove a member",
        description="Ends their access to the team; their personal tokens on this team are "
        "revoked in the same transaction (a `token.revoke` event each, reason "
        "`member-removed`). 400 for the last admin.",
        responses={204: None, **error_responses(*AUTH_ERRORS, 400, 404)},
    )
    def delete(self, request: Request, pk: int) -> Response:
        services.membership_remove(actor=Actor.from_request(request), membership=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    get=extend_schema(
        summary="List the team's invitations",
        responses={200: InvitationSerializer(many=True), **error_responses(*AUTH_ERRORS, 400)},
    )
)
class InvitationList(generics.ListAPIView):
    permission_classes = [HasScope]
    required_scopes = MANAGE
    serializer_class = InvitationSerializer
    queryset = Invitation.objects.none()  # the schema's model; get_queryset is the team's
    filter_backends = [TeamFilterBackend]
    filterset_class = InvitationFilterSet  # the invitations page's

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return (
            Invitation.objects.filter(team=request_team(self.request))
            .select_related("invited_by", "accepted_by")
            .order_by("-created_at", "-id")
        )

    @extend_schema(
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
    )
    def post(self, request: Request) -> Response:
        body = InvitationCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        invitation, link = invitations.invitation_create(
            actor=Actor.from_request(request),
            team=request_team(request),
            email=body.validated_data["email"],
            role=body.validated_data["role"],
            link=invite_link(request),
        )
        data = InvitationCreatedSerializer(invitation).data | {"link": link}
        return Response(data, status=status.HTTP_201_CREATED, headers={"Cache-Control": "no-store"})


class InvitationDetail(generics.GenericAPIView):
    permission_classes = [HasScope]
    required_scopes = MANAGE
    serializer_class = InvitationSerializer

    def get_object(self) -> Invitation:  # type: ignore[override]
        return get_object_or_404(Invitation, pk=self.kwargs["pk"], team=request_team(self.request))

    @extend_schema(
        summary="One invitation",
        responses={200: InvitationSerializer, **error_responses(*AUTH_ERRORS, 404)},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(InvitationSerializer(self.get_object()).data)

    @extend_schema(
        summary="Revoke a pending invitation",
        description="Its link stops working. 409 `invitation-accepted`, `invitation-revoked` "
        "or `invitation-expired` when it is not pending.",
        responses={204: None, **error_responses(*AUTH_ERRORS, 404, 409)},
    )
    def delete(self, request: Request, pk: int) -> Response:
        invitations.invitation_revoke(
            actor=Actor.from_request(request), invitation=self.get_object()
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
