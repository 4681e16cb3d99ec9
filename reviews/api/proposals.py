"""Proposals: the queue, one memory by pk, id or ref, the audited reveal, approve, reject, batch."""

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

from bundles.api.agents import ProposeView
from memoryadmin.api import HasScope, TeamFilterBackend, request_team
from memoryadmin.api_errors import AUTH_ERRORS, ApiError, error_responses
from memoryadmin.audit import Actor
from memoryadmin.models import Scope
from reviews import selectors
from reviews.api.schemas import DECIDE_ERRORS, KEY, READ, REPOSITORY, WRITE, decide_schema
from reviews.filters import QueueFilterSet
from reviews.models import Memory, Repository
from reviews.serializers import (
    ApprovalSerializer,
    BatchResultSerializer,
    BatchSerializer,
    DecideSerializer,
    DecisionSerializer,
    ProposalListSerializer,
    ProposalSerializer,
    RevealSerializer,
)
from reviews.services.content import proposal_secret_reveal
from reviews.services.decisions import proposals_review


def resolve_proposal(request: Request, key: str) -> Memory:
    team = request_team(request)
    repository = None
    if request.query_params.get("repository", "").isdigit():
        repository = Repository.objects.filter(
            team=team, pk=int(request.query_params["repository"])
        ).first()
        if repository is None:
            raise ApiError(404, "not-found", "No such repository.")
    found = selectors.find_memories(team, key, repository=repository)
    if not found:
        raise ApiError(404, "not-found", f"No memory with pk, id or ref {key!r}.")
    if len(found) > 1:
        raise ApiError(
            409,
            "ref-ambiguous",
            f"{key} matches {len(found)} memories; name the repository or use the id.",
            [{"repository": m.repository_id, "id": m.memory_id} for m in found],
        )
    return found[0]


@extend_schema_view(
    get=extend_schema(
        summary="The review queue: open proposals, oldest first",
        parameters=[
            OpenApiParameter("repository", OpenApiTypes.INT, description="Only this repository."),
            OpenApiParameter("type", OpenApiTypes.STR, description="Only this memory type."),
            OpenApiParameter(
                "flag",
                OpenApiTypes.STR,
                enum=["secret", "stale", "clean"],
                description="Only proposals with secret findings, stale ones, or neither.",
            ),
            OpenApiParameter(
                "assigned",
                OpenApiTypes.STR,
                enum=["me"],
                description="Only proposals the routing rules assign to me (a token acts for"
                " the user who created it).",
            ),
        ],
        responses={200: ProposalListSerializer(many=True), **error_responses(*AUTH_ERRORS, 400)},
    )
)
class ProposalList(generics.ListAPIView):
    """GET lists proposals; POST proposes one as an agent (the REST face of `propose_memory`,
    also at `POST /api/memories/`)."""

    permission_classes = [HasScope]
    required_scopes = {**READ, "POST": Scope.REVIEWS_PROPOSE}
    serializer_class = ProposalListSerializer
    queryset = Memory.objects.none()  # the schema's model; get_queryset is the team's
    filter_backends = [TeamFilterBackend]
    filterset_class = QueueFilterSet  # the review queue page's
    post = ProposeView.post

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return selectors.review_queue(request_team(self.request), filters={})


class ProposalDetail(APIView):
    permission_classes = [HasScope]
    required_scopes = READ

    @extend_schema(
        summary="One memory, by primary key, id or ref",
        parameters=[KEY, REPOSITORY],
        responses={200: ProposalSerializer, **error_responses(*AUTH_ERRORS, 404, 409)},
    )
    def get(self, request: Request, key: str) -> Response:
        return Response(ProposalSerializer(resolve_proposal(request, key)).data)


class ProposalReveal(APIView):
    permission_classes = [HasScope]
    required_scopes = WRITE

    @extend_schema(
        summary="Show one memory's masked secrets, once (audited)",
        description="Every read of a proposal masks the spans the secret rules match "
        "(`[secret masked: RULE]`; `secret_findings` keeps rule and line). This answers the "
        "memory with its own text, in this response only (`Cache-Control: no-store`), for a "
        "reviewer who says why: `reason` is required (400 `reason-required`) and recorded "
        "with each finding's rule and line in the audit event `review.secret-reveal`, never "
        "the value. 409 `nothing-masked` when nothing in the memory is masked.",
        parameters=[KEY, REPOSITORY],
        request=RevealSerializer,
        responses={200: ProposalSerializer, **error_responses(400, *AUTH_ERRORS, 404, 409)},
    )
    def post(self, request: Request, key: str) -> Response:
        memory = resolve_proposal(request, key)
        body = RevealSerializer(data=request.data)
        if not body.is_valid():
            raise ApiError(400, "invalid", "Invalid request body.", body.errors)
        memory = proposal_secret_reveal(
            actor=Actor.from_request(request), memory=memory, reason=body.validated_data["reason"]
        )
        response = Response(ProposalSerializer(memory, context={"reveal": True}).data)
        response["Cache-Control"] = "no-store"
        return response


class ProposalDecide(APIView):
    permission_classes = [HasScope]
    required_scopes = WRITE
    kind = "approve"

    def post(self, request: Request, key: str) -> Response:
        memory = resolve_proposal(request, key)
        body = DecideSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        outcome = proposals_review(
            actor=Actor.from_request(request),
            team=memory.team,
            memory_ids=[memory.pk],
            kind=self.kind,
            comment=body.validated_data["comment"],
            override_reason=body.validated_data["override_reason"],
        )
        if outcome.first_approvals:
            (approval,) = outcome.first_approvals
            return Response(ApprovalSerializer(approval).data, status=status.HTTP_202_ACCEPTED)
        (decision,) = outcome.decisions
        return Response(DecisionSerializer(decision).data, status=status.HTTP_202_ACCEPTED)


@decide_schema("approve")
class ProposalApprove(ProposalDecide):
    kind = "approve"


@decide_schema("reject")
class ProposalReject(ProposalDecide):
    kind = "reject"


class Batch(APIView):
    permission_classes = [HasScope]
    required_scopes = WRITE

    @extend_schema(
        summary="Approve or reject many proposals in one decision (one commit)",
        parameters=[REPOSITORY],
        request=BatchSerializer,
        responses={202: BatchResultSerializer, **DECIDE_ERRORS},
        examples=[
            OpenApiExample(
                "Batch",
                value={"action": "approve", "proposals": ["D-7a3f", "42"], "comment": ""},
                request_only=True,
            )
        ],
    )
    def post(self, request: Request) -> Response:
        body = BatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        team = request_team(request)
        memories = [resolve_proposal(request, str(key)) for key in body.validated_data["proposals"]]
        outcome = proposals_review(
            actor=Actor.from_request(request),
            team=team,
            memory_ids=[m.pk for m in memories],
            kind=body.validated_data["action"],
            comment=body.validated_data["comment"],
            override_reason=body.validated_data["override_reason"],
        )
        return Response(
            {
                "decisions": DecisionSerializer(outcome.decisions, many=True).data,
                "first_approvals": ApprovalSerializer(outcome.first_approvals, many=True).data,
            },
            status=status.HTTP_202_ACCEPTED,
        )
