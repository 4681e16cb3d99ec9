"""Decisions: their push state, the retry of a failed push, lifting a rejection for imports."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.api import HasScope, TeamFilterBackend, request_team
from memoryadmin.api_errors import AUTH_ERRORS, ApiError, error_responses
from memoryadmin.audit import Actor
from reviews.api.schemas import DECISION_EXAMPLE, READ, WRITE
from reviews.filters import DecisionFilterSet
from reviews.models import Decision
from reviews.serializers import DecisionSerializer, ReproposalAllowSerializer
from reviews.services.push import decision_push_retry
from reviews.services.rejections import rejection_reproposal_allow


@extend_schema_view(
    get=extend_schema(
        summary="A decision and its push state",
        responses={200: DecisionSerializer, **error_responses(*AUTH_ERRORS, 404)},
    )
)
class DecisionDetail(generics.RetrieveAPIView):
    permission_classes = [HasScope]
    required_scopes = READ
    serializer_class = DecisionSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return Decision.objects.filter(team=request_team(self.request)).prefetch_related("items")


class DecisionRetry(APIView):
    permission_classes = [HasScope]
    required_scopes = WRITE

    @extend_schema(
        summary="Retry the push of a failed decision",
        description="Queues the push of a decision in state `failed` again (same commit "
        "message and author; it is re-applied on the remote's current head and never forced). "
        "Answers 202 with the decision, now `pending`; poll it for the outcome. 409 "
        "`decision-not-retryable` when the decision is pending, pushed or in `conflict` (a "
        "conflicting proposal changed upstream and needs a new review), `proposal-not-open` "
        "when a proposal of the decision changed, went or was decided again since, "
        "`push-disabled` when the repository does not push.",
        request=None,
        responses={
            202: DecisionSerializer,
            **error_responses(*AUTH_ERRORS, 404, 409),
        },
        examples=[
            OpenApiExample(
                "Queued again",
                value=DECISION_EXAMPLE | {"state_detail": "retry requested by user:rita"},
                response_only=True,
                status_codes=[202],
            )
        ],
    )
    def post(self, request: Request, pk: int) -> Response:
        team = request_team(request)
        decision = Decision.objects.filter(team=team, pk=pk).first()
        if decision is None:
            raise ApiError(404, "not-found", f"No decision {pk} in this team.")
        decision = decision_push_retry(actor=Actor.from_request(request), decision=decision)
        decision = Decision.objects.prefetch_related("items").get(pk=decision.pk)
        return Response(DecisionSerializer(decision).data, status=status.HTTP_202_ACCEPTED)


class DecisionAllowReproposal(APIView):
    permission_classes = [HasScope]
    required_scopes = WRITE

    @extend_schema(
        summary="Let imports propose rejected texts again",
        description="A pushed rejection keeps bundle imports (`POST /v1/brain/import?"
        "propose_to=`) from proposing the same text to this repository again (their report "
        "counts it in `proposals.skipped_rejected`). This lifts it for the named proposals "
        "(`refs`: short refs or MemoryRail ids) or for all of the decision's; the next import "
        "carrying the text proposes it, and it waits for review like any proposal. Audited "
        "(`review.reproposal-allow`); lifting twice changes nothing. 409 "
        "`decision-not-rejection` for an approval, `rejection-not-pushed` while the rejection "
        "has not landed; 400 `ref-unknown` for a ref the decision did not reject.",
        request=ReproposalAllowSerializer,
        responses={
            200: DecisionSerializer,
            **error_responses(400, *AUTH_ERRORS, 404, 409),
        },
        examples=[
            OpenApiExample(
                "Lifted",
                value=DECISION_EXAMPLE
                | {"kind": "reject", "state": "pushed", "reproposal_allowed": ["D-7a3f"]},
                response_only=True,
                status_codes=[200],
            )
        ],
    )
    def post(self, request: Request, pk: int) -> Response:
        team = request_team(request)
        decision = Decision.objects.filter(team=team, pk=pk).first()
        if decision is None:
            raise ApiError(404, "not-found", f"No decision {pk} in this team.")
        body = ReproposalAllowSerializer(data=request.data)
        if not body.is_valid():
            raise ApiError(400, "invalid", "Invalid request body.", body.errors)
        rejection_reproposal_allow(
            actor=Actor.from_request(request),
            decision=decision,
            refs=body.validated_data["refs"],
            comment=body.validated_data["comment"],
        )
        decision = Decision.objects.prefetch_related("items").get(pk=decision.pk)
        return Response(DecisionSerializer(decision).data)


@extend_schema_view(
    get=extend_schema(
        summary="Decisions and their push state, newest first",
        parameters=[
            OpenApiParameter(
                "state",
                OpenApiTypes.STR,
                enum=["pending", "pushed", "failed", "conflict"],
                description="Only decisions in this push state.",
            ),
            OpenApiParameter("repository", OpenApiTypes.INT, description="Only this repository."),
        ],
        responses={200: DecisionSerializer(many=True), **error_responses(*AUTH_ERRORS, 400)},
    )
)
class DecisionList(generics.ListAPIView):
    permission_classes = [HasScope]
    required_scopes = READ
    serializer_class = DecisionSerializer
    queryset = Decision.objects.none()  # the schema's model; get_queryset is the team's
    filter_backends = [TeamFilterBackend]
    filterset_class = DecisionFilterSet  # the decision history page's

    def get_queryset(self):  # type: ignore[no-untyped-def]
        queryset = Decision.objects.filter(team=request_team(self.request)).prefetch_related(
            "items"
        )
        return queryset.order_by("-created_at", "-id")
