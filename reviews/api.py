"""REST API for reviews: repositories, proposals (by pk, id or ref), approve, reject, batch,
decisions, the retry of a failed push and lifting a rejection for imports.

Decisions made with a token record the token as the actor; their commits are authored by the
token's creator when there is one, else by the configured bot identity (REVIEW_BOT_IDENTITY).
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.api import HasScope, request_team, request_token
from memoryadmin.api_errors import AUTH_ERRORS, ApiError, error_responses
from memoryadmin.audit import Actor
from reviews import selectors
from reviews.models import Decision, Memory, PushState, Repository
from reviews.serializers import (
    ApprovalSerializer,
    BatchResultSerializer,
    BatchSerializer,
    DecideSerializer,
    DecisionSerializer,
    ProposalListSerializer,
    ProposalSerializer,
    RepositorySerializer,
    ReproposalAllowSerializer,
    RevealSerializer,
)
from reviews.services.content import RevealRefused, proposal_secret_reveal
from reviews.services.decisions import (
    AlreadyApproved,
    HumanApprovalRequired,
    LinkOutsideRepo,
    ProposalNotOpen,
    SecretOverrideRequired,
    proposals_review,
)
from reviews.services.push import DecisionNotRetryable, decision_push_retry
from reviews.services.rejections import RejectionNotLiftable, rejection_reproposal_allow

READ = {"GET": "reviews:read"}
WRITE = {"POST": "reviews:write"}

KEY = OpenApiParameter(
    "key",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    description="The memory's primary key, its MemoryRail id, or its short ref.",
)
REPOSITORY = OpenApiParameter(
    "repository",
    OpenApiTypes.INT,
    description="Only look in this repository (resolves an ambiguous ref).",
)
DECISION_EXAMPLE = {
    "id": 12,
    "kind": "approve",
    "repository": 3,
    "refs": ["D-7a3f"],
    "reproposal_allowed": [],
    "comment": "Matches what we agreed.",
    "actor_label": "rita",
    "author_name": "Rita",
    "author_email": "rita@example.org",
    "state": "pending",
    "state_detail": "",
    "commit_sha": "",
    "attempts": 0,
    "created_at": "2026-01-05T09:00:00Z",
    "finished_at": None,
}
DECIDE_ERRORS = error_responses(400, *AUTH_ERRORS, 404, 409)


def _decide_error(exc: ValidationError) -> ApiError:
    code = (
        "secret-override-required"
        if isinstance(exc, SecretOverrideRequired)
        else ("proposal-not-open" if isinstance(exc, ProposalNotOpen) else "invalid")
    )
    if isinstance(exc, AlreadyApproved):
        code = "already-approved"
    if isinstance(exc, LinkOutsideRepo):
        code = "link-outside-repo"
    status_code = (
        409 if code in ("proposal-not-open", "already-approved", "link-outside-repo") else 400
    )
    if isinstance(exc, HumanApprovalRequired):
        code, status_code = "human-approval-required", 403
    details = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
    return ApiError(status_code, code, exc.messages[0], details)


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
        summary="List the team's review repositories",
        responses={200: RepositorySerializer(many=True), **error_responses(*AUTH_ERRORS)},
    )
)
class RepositoryList(generics.ListAPIView):
    permission_classes = [HasScope]
    required_scopes = READ
    serializer_class = RepositorySerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return Repository.objects.filter(team=request_team(self.request)).order_by("id")


@extend_schema_view(
    get=extend_schema(
        summary="A review repository",
        responses={200: RepositorySerializer, **error_responses(*AUTH_ERRORS, 404)},
    )
)
class RepositoryDetail(generics.RetrieveAPIView):
    permission_classes = [HasScope]
    required_scopes = READ
    serializer_class = RepositorySerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return Repository.objects.filter(team=request_team(self.request))


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
        responses={200: ProposalListSerializer(many=True), **error_responses(*AUTH_ERRORS)},
    )
)
class ProposalList(generics.ListAPIView):
    permission_classes = [HasScope]
    required_scopes = READ
    serializer_class = ProposalListSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        params = self.request.query_params
        filters = {k: params.get(k, "") for k in ("repository", "type", "flag", "assigned")}
        if not filters["repository"].isdigit():
            filters["repository"] = ""
        token = request_token(self.request)
        user = token.created_by if token is not None else self.request.user
        return selectors.review_queue(request_team(self.request), filters=filters, user=user)


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
        try:
            memory = proposal_secret_reveal(
                actor=Actor.from_request(request),
                memory=memory,
                reason=body.validated_data["reason"],
            )
        except PermissionDenied as exc:
            raise ApiError(403, "forbidden", str(exc)) from exc
        except RevealRefused as exc:
            code = exc.code or "reason-required"
            status_code = 409 if code == "nothing-masked" else 400
            raise ApiError(status_code, code, exc.messages[0], {"reason": exc.messages}) from exc
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
        try:
            outcome = proposals_review(
                actor=Actor.from_request(request),
                team=memory.team,
                memory_ids=[memory.pk],
                kind=self.kind,
                comment=body.validated_data["comment"],
                override_reason=body.validated_data["override_reason"],
            )
        except PermissionDenied as exc:
            raise ApiError(403, "forbidden", str(exc)) from exc
        except ValidationError as exc:
            raise _decide_error(exc) from exc
        if outcome.first_approvals:
            (approval,) = outcome.first_approvals
            return Response(ApprovalSerializer(approval).data, status=status.HTTP_202_ACCEPTED)
        (decision,) = outcome.decisions
        return Response(DecisionSerializer(decision).data, status=status.HTTP_202_ACCEPTED)


DECIDE_RESULT = PolymorphicProxySerializer(
    component_name="DecideResult",
    serializers=[DecisionSerializer, ApprovalSerializer],
    resource_type_field_name=None,
)


def _decide_schema(kind: str):  # type: ignore[no-untyped-def]
    return extend_schema_view(
        post=extend_schema(
            summary=f"{kind.title()} one proposal",
            description=f"Records a {kind} decision; its commit and push run in the "
            "background. Poll the decision for its push `state`. When the team requires two "
            "approvals for constraints and decisions, a first approval answers with an "
            "approval (`state: awaiting-second-approval`) and commits nothing; the same person "
            "approving twice gets 409 `already-approved`. A proposal whose staleness report has a "
            "`link-outside-repo` error (a link escaping the repository) cannot be approved: "
            "409 `link-outside-repo` (rejecting it works).",
            parameters=[KEY, REPOSITORY],
            request=DecideSerializer,
            responses={202: DECIDE_RESULT if kind == "approve" else DecisionSerializer}
            | DECIDE_ERRORS,
            examples=[
                OpenApiExample(
                    "Decision",
                    value=DECISION_EXAMPLE | {"kind": kind},
                    response_only=True,
                    status_codes=[202],
                )
            ],
        )
    )


@_decide_schema("approve")
class ProposalApprove(ProposalDecide):
    kind = "approve"


@_decide_schema("reject")
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
        try:
            outcome = proposals_review(
                actor=Actor.from_request(request),
                team=team,
                memory_ids=[m.pk for m in memories],
                kind=body.validated_data["action"],
                comment=body.validated_data["comment"],
                override_reason=body.validated_data["override_reason"],
            )
        except PermissionDenied as exc:
            raise ApiError(403, "forbidden", str(exc)) from exc
        except ValidationError as exc:
            raise _decide_error(exc) from exc
        return Response(
            {
                "decisions": DecisionSerializer(outcome.decisions, many=True).data,
                "first_approvals": ApprovalSerializer(outcome.first_approvals, many=True).data,
            },
            status=status.HTTP_202_ACCEPTED,
        )


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
        try:
            decision = decision_push_retry(actor=Actor.from_request(request), decision=decision)
        except PermissionDenied as exc:
            raise ApiError(403, "forbidden", str(exc)) from exc
        except DecisionNotRetryable as exc:
            raise ApiError(409, exc.code or "decision-not-retryable", exc.messages[0]) from exc
        except ValidationError as exc:
            raise _decide_error(exc) from exc
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
        try:
            rejection_reproposal_allow(
                actor=Actor.from_request(request),
                decision=decision,
                refs=body.validated_data["refs"],
                comment=body.validated_data["comment"],
            )
        except PermissionDenied as exc:
            raise ApiError(403, "forbidden", str(exc)) from exc
        except RejectionNotLiftable as exc:
            raise ApiError(409, exc.code or "decision-not-rejection", exc.messages[0]) from exc
        except ValidationError as exc:
            code = getattr(exc, "code", None) or "invalid"
            raise ApiError(400, code, exc.messages[0], {"refs": exc.messages}) from exc
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
        responses={200: DecisionSerializer(many=True), **error_responses(*AUTH_ERRORS)},
    )
)
class DecisionList(generics.ListAPIView):
    permission_classes = [HasScope]
    required_scopes = READ
    serializer_class = DecisionSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        params = self.request.query_params
        queryset = Decision.objects.filter(team=request_team(self.request)).prefetch_related(
            "items"
        )
        if params.get("state") in PushState.values:
            queryset = queryset.filter(state=params["state"])
        if params.get("repository", "").isdigit():
            queryset = queryset.filter(repository_id=int(params["repository"]))
        return queryset.order_by("-created_at", "-id")
