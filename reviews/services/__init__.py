"""Every write of the reviews app (re-exported so callers import from one place)."""

from __future__ import annotations

from reviews.services.content import RevealRefused, proposal_secret_reveal
from reviews.services.decisions import (
    AlreadyApproved,
    HumanApprovalRequired,
    LinkOutsideRepo,
    ProposalNotOpen,
    ReviewOutcome,
    SecretOverrideRequired,
    commit_identity,
    proposal_approve,
    proposal_reject,
    proposals_decide,
    proposals_review,
)
from reviews.services.push import (
    DecisionNotRetryable,
    decision_push_retry,
    decisions_fail_pending,
    repository_push_pending,
)
from reviews.services.rejections import RejectionNotLiftable, rejection_reproposal_allow
from reviews.services.repositories import (
    repository_create,
    repository_sync,
    repository_sync_request,
    validate_remote_url,
    working_copy,
)

__all__ = [
    "AlreadyApproved",
    "DecisionNotRetryable",
    "HumanApprovalRequired",
    "LinkOutsideRepo",
    "ProposalNotOpen",
    "RejectionNotLiftable",
    "RevealRefused",
    "ReviewOutcome",
    "SecretOverrideRequired",
    "commit_identity",
    "decision_push_retry",
    "decisions_fail_pending",
    "proposal_approve",
    "proposal_reject",
    "proposal_secret_reveal",
    "proposals_decide",
    "proposals_review",
    "rejection_reproposal_allow",
    "repository_create",
    "repository_push_pending",
    "repository_sync",
    "repository_sync_request",
    "validate_remote_url",
    "working_copy",
]
