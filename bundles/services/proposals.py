"""An import's proposals on their way into review: pushed under the repository lock."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from bundles.models import ImportProposal, ProposalState
from memoryadmin.audit import Actor, audit_record


def import_proposal_push(*, proposal_id: int, wait: float = 120.0) -> ImportProposal | None:
    """Commit and push a pending proposal (idempotent). Transient git errors propagate."""
    from reviews.git import GitError
    from reviews.services.agent_proposals import proposals_push

    proposal = ImportProposal.objects.filter(pk=proposal_id).select_related("team").first()
    if proposal is None or proposal.state != ProposalState.PENDING:
        return proposal
    ImportProposal.objects.filter(pk=proposal.pk).update(attempts=proposal.attempts + 1)
    try:
        sha, written = proposals_push(
            repository_id=proposal.repository_id,
            items=proposal.items,
            author=(proposal.author_name, proposal.author_email),
            label=f"imported by {proposal.actor_label}",
            marker=str(proposal.pk),
            wait=wait,
        )
    except GitError as exc:
        if exc.transient:
            ImportProposal.objects.filter(pk=proposal.pk).update(detail=f"retrying: {exc.message}")
            raise
        return import_proposal_finish(
            proposal_id=proposal.pk, state=ProposalState.FAILED, detail=exc.message
        )
    state = ProposalState.PUSHED if written else ProposalState.EMPTY
    detail = "" if written else "every proposal was already in the repository"
    return import_proposal_finish(
        proposal_id=proposal.pk, state=state, commit_sha=sha, detail=detail
    )


@transaction.atomic
def import_proposal_finish(
    *, proposal_id: int, state: str, commit_sha: str = "", detail: str = ""
) -> ImportProposal:
    proposal = ImportProposal.objects.select_for_update().get(pk=proposal_id)
    if proposal.state != ProposalState.PENDING:
        return proposal
    proposal.state, proposal.commit_sha, proposal.detail = state, commit_sha, detail
    proposal.finished_at = timezone.now()
    proposal.save(update_fields=["state", "commit_sha", "detail", "finished_at"])
    audit_record(
        actor=Actor.system(),
        action=f"brain.propose-{state}",
        team=proposal.team,
        target=proposal,
        summary=f"Imported proposals #{proposal.pk} {state}" + (f": {detail}" if detail else ""),
        data={"state": state, "commit": commit_sha, "detail": detail},
    )
    return proposal
