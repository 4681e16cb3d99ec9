"""A pushed rejection keeps imports from proposing the same text again, until a reviewer lifts it.

The rejected text is known by hash (`DecisionItem.content_hash`, `proposed_hash`); the check is
`reviews.services.agent_proposals.proposal_drafts`. Lifting is per proposal, deliberate and audited:
a rejection does not expire by itself (see docs/brain.md, "Rejected stays rejected").
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from memoryadmin.audit import Actor, audit_record
from memoryadmin.errors import Conflict, DomainError
from memoryadmin.models import Scope
from memoryadmin.permissions import actor_require
from reviews.models import Decision, DecisionItem, DecisionKind, PushState


class RejectionNotLiftable(Conflict):
    """Only a landed rejection keeps a text out; `code` says why this one cannot be lifted."""

    code = "decision-not-rejection"


class RefNotRejected(DomainError):
    """A ref (or MemoryRail id) the decision did not reject: nothing to lift for it."""

    code = "ref-unknown"


@transaction.atomic
def rejection_reproposal_allow(
    *, actor: Actor, decision: Decision, refs: list[str] | None = None, comment: str = ""
) -> list[DecisionItem]:
    """Let imports propose the text of rejected proposals again (all of the decision's, or
    those named by short ref or MemoryRail id). Returns the items named; lifting an item
    already lifted changes nothing and records nothing."""
    decision = (
        Decision.objects.select_for_update(of=("self",))
        .select_related("team", "repository")
        .get(pk=decision.pk)
    )
    actor_require(actor, decision.team, Scope.REVIEWS_WRITE)
    if decision.kind != DecisionKind.REJECT:
        raise RejectionNotLiftable(
            f"Decision #{decision.pk} is an approval; only a rejection keeps a text from being"
            " proposed again.",
            code="decision-not-rejection",
        )
    if decision.state != PushState.PUSHED:
        raise RejectionNotLiftable(
            f"Decision #{decision.pk} is {decision.state}: the rejection has not landed, so the"
            " proposal is still in the repository and nothing keeps it out.",
            code="rejection-not-pushed",
        )
    items = list(decision.items.select_for_update().order_by("id"))
    wanted = {r.strip() for r in refs or [] if r.strip()}
    unknown = wanted - {i.ref for i in items} - {i.memory_key for i in items}
    if unknown:
        raise RefNotRejected(
            {"refs": f"Decision #{decision.pk} did not reject {', '.join(sorted(unknown))}."}
        )
    chosen = [i for i in items if not wanted or i.ref in wanted or i.memory_key in wanted]
    lifting = [i for i in chosen if i.reproposal_allowed_at is None]
    if not lifting:
        return chosen
    now = timezone.now()
    for item in lifting:
        item.reproposal_allowed_at, item.reproposal_allowed_by = now, actor.label[:200]
    DecisionItem.objects.bulk_update(
        lifting, ["reproposal_allowed_at", "reproposal_allowed_by"], batch_size=500
    )
    lifted = [i.ref for i in lifting]
    comment = comment.strip()
    audit_record(
        actor=actor,
        action="review.reproposal-allow",
        team=decision.team,
        target=decision,
        summary=f"Allowed imports to propose {', '.join(lifted)} again in"
        f" {decision.repository.name} (rejected in decision #{decision.pk})"
        + (f": {comment}" if comment else ""),
        data={
            "repository": decision.repository.name,
            "decision": decision.pk,
            "refs": lifted,
            "memory_ids": [i.memory_key for i in lifting],
            "content_hashes": sorted(
                {h for i in lifting for h in (i.content_hash, i.proposed_hash) if h}
            ),
            "rejected_by": decision.actor_label,
            "rejection_comment": decision.comment,
            "comment": comment,
        },
    )
    return chosen
