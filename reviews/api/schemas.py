"""Scopes and OpenAPI pieces the reviews endpoints share (documentation only, except the scopes)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
)

from memoryadmin.api_errors import AUTH_ERRORS, error_responses
from reviews.serializers import ApprovalSerializer, DecideSerializer, DecisionSerializer

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

DECIDE_RESULT = PolymorphicProxySerializer(
    component_name="DecideResult",
    serializers=[DecisionSerializer, ApprovalSerializer],
    resource_type_field_name=None,
)


def decide_schema(kind: str):  # type: ignore[no-untyped-def]
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
