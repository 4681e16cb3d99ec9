"""Two approvals: which first approvals still count, and recording a first approval that waits."""

from __future__ import annotations

from memoryadmin.audit import Actor, audit_record
from memoryadmin.errors import Conflict, Forbidden
from memoryadmin.models import Team
from reviews.identity import commit_identity
from reviews.models import TWO_APPROVAL_TYPES, Approval, Memory, ReviewSettings
from reviews.services.content import masked_title


class AlreadyApproved(Conflict):
    """The same person tried to give both approvals of a proposal that needs two."""

    code = "already-approved"


class HumanApprovalRequired(Forbidden):
    """A team token (no person behind it) tried to approve where two people must approve."""

    code = "human-approval-required"


def valid_first_approvals(memories: list[Memory]) -> dict[int, Approval]:
    """The first approval of each memory that still counts: given on the blob now indexed, by
    a person (approvals recorded from team tokens before they were refused never count)."""
    blobs = {m.pk: m.blob_sha for m in memories}
    found: dict[int, Approval] = {}
    approvals = Approval.objects.filter(memory_id__in=blobs, approver_key__startswith="user:")
    for approval in approvals.order_by("id"):
        if approval.blob_sha == blobs[approval.memory_id]:
            found.setdefault(approval.memory_id, approval)
    return found


def _first_approvals(
    *, actor: Actor, team: Team, memories: list[Memory], comment: str, override_reason: str
) -> tuple[list[Memory], list[Approval], dict[int, Approval]]:
    """Split an approval: (ready to commit, first approvals recorded now, earlier approvals)."""
    settings_row = ReviewSettings.objects.filter(team=team).only("require_two_approvals").first()
    needing = [m for m in memories if m.type in TWO_APPROVAL_TYPES]
    if settings_row is None or not settings_row.require_two_approvals or not needing:
        return memories, [], {}
    earlier = valid_first_approvals(needing)
    me = actor.approver_key
    if me is None:  # only people approve where two approvals are needed
        raise HumanApprovalRequired(
            {
                "proposals": (
                    "This proposal needs the approvals of two people; a team token (or the"
                    " system) is not a person. Approve in the browser or with a personal token."
                )
            }
        )
    twice = [m.ref for m in needing if m.pk in earlier and earlier[m.pk].approver_key == me]
    if twice:
        raise AlreadyApproved(
            {
                "proposals": (
                    f"You already approved {', '.join(twice)}; the second approval must come"
                    " from a different reviewer."
                )
            }
        )
    author_name, author_email = commit_identity(actor)
    ready, recorded = [], []
    for memory in memories:
        if memory.type not in TWO_APPROVAL_TYPES or memory.pk in earlier:
            ready.append(memory)
            continue
        approval = Approval.objects.create(
            team=team,
            memory=memory,
            blob_sha=memory.blob_sha,
            reviewer=actor.user,
            token=actor.token,
            approver_key=me,
            actor_label=actor.label,
            author_name=author_name,
            author_email=author_email,
            comment=comment,
        )
        audit_record(
            actor=actor,
            action="review.first-approval",
            team=team,
            target=approval,
            summary=(
                f"First approval (1 of 2) of {memory.ref} {masked_title(memory.title)}"
                f" in {memory.repository.name}"
            ),
            data={
                "repository": memory.repository.name,
                "ref": memory.ref,
                "comment": comment,
                "override_reason": override_reason if memory.has_secret else "",
            },
        )
        recorded.append(approval)
    return ready, recorded, earlier
