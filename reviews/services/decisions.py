"""Approve and reject proposals: record the decision at once, commit and push it in a task."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse

from formats import memoryrail
from formats.crosswalk import memory_hashes
from memoryadmin.audit import Actor, audit_record
from memoryadmin.bulk import bulk_insert
from memoryadmin.errors import Conflict, DomainError
from memoryadmin.models import Scope, Team
from memoryadmin.permissions import actor_require
from memoryadmin.queue import enqueue_on_commit
from reviews.identity import commit_identity, reviewer_username
from reviews.models import (
    Approval,
    Decision,
    DecisionItem,
    DecisionKind,
    Memory,
    MemoryStatus,
    PushState,
)
from reviews.services.approvals import _first_approvals
from reviews.services.content import masked_body, masked_title
from reviews.task_names import REPOSITORY_PUSH_PENDING
from webhooks import events as webhook_events
from webhooks.emit import event_emit


class SecretOverrideRequired(DomainError):
    """A proposal with a secret finding needs an explicit, reasoned override to be approved."""

    code = "secret-override-required"


class ProposalNotOpen(Conflict):
    """The proposal is no longer waiting for review (decided, pending or gone)."""

    code = "proposal-not-open"


class LinkOutsideRepo(Conflict):
    """A proposal links a path outside the repository: it can be rejected, never approved."""

    code = "link-outside-repo"


@dataclass
class ReviewOutcome:
    """What one review action did: decisions to commit, and first approvals that wait."""

    decisions: list[Decision] = field(default_factory=list)
    first_approvals: list[Approval] = field(default_factory=list)


@transaction.atomic
def proposals_review(
    *,
    actor: Actor,
    team: Team,
    memory_ids: list[int],
    kind: str,
    comment: str = "",
    override_reason: str = "",
) -> ReviewOutcome:
    """Decide one or many proposals: one Decision (one commit) per repository involved; where
    the team needs two approvals, a first approval only records it.

    A second approval by a different person commits as usual, naming both reviewers.
    """
    actor_require(actor, team, Scope.REVIEWS_WRITE)
    comment, override_reason = comment.strip(), override_reason.strip()
    memories = _check_open(
        team=team,
        memory_ids=memory_ids,
        kind=kind,
        comment=comment,
        override_reason=override_reason,
    )
    outcome = ReviewOutcome()
    earlier: dict[int, Approval] = {}
    if kind == DecisionKind.APPROVE:
        memories, outcome.first_approvals, earlier = _first_approvals(
            actor=actor,
            team=team,
            memories=memories,
            comment=comment,
            override_reason=override_reason,
        )
    by_repository: dict[int, list[Memory]] = defaultdict(list)
    for memory in memories:
        by_repository[memory.repository_id].append(memory)
    for group in by_repository.values():
        decision = _decision_create(
            actor=actor,
            team=team,
            group=group,
            kind=kind,
            comment=comment,
            override_reason=override_reason,
            earlier=earlier,
        )
        enqueue_on_commit(REPOSITORY_PUSH_PENDING, decision.repository_id)
        outcome.decisions.append(decision)
    return outcome


@transaction.atomic
def proposals_blocking(
    *, team: Team, memory_ids: list[int], kind: str, comment: str = "", override_reason: str = ""
) -> dict[int, str]:
    """Which of a refused batch's proposals refuse on their own, and why (nothing is written):
    the queue marks those rows and offers to decide the others."""
    comment, override_reason = comment.strip(), override_reason.strip()
    blocking: dict[int, str] = {}
    for memory_id in dict.fromkeys(memory_ids):
        try:
            _check_open(
                team=team,
                memory_ids=[memory_id],
                kind=kind,
                comment=comment,
                override_reason=override_reason,
            )
        except ValidationError as exc:
            blocking[memory_id] = " ".join(exc.messages)
    if len(blocking) == len(set(memory_ids)):
        return {}  # the batch as a whole is refused (a missing comment): no row is to blame
    return blocking


# What a decision reads of its proposals (and of their repository: its name), locked; the
# rest of each row, and the repository's JSON fields read once per proposal, cost more than
# the rows' lock and the decision's own writes.
_DECIDED_FIELDS = (
    *("id", "repository_id", "memory_id", "ref", "type", "title", "status", "path", "blob_sha"),
    *("front_matter", "body", "supersedes", "added_at", "secret_findings", "stale", "has_secret"),
    *("repository__id", "repository__team_id", "repository__name"),
)


def _check_open(
    *, team: Team, memory_ids: list[int], kind: str, comment: str, override_reason: str
) -> list[Memory]:
    """The guards: the proposals, locked, each still waiting and allowed to be decided so."""
    if kind not in DecisionKind.values:
        raise ValidationError({"kind": "Choose approve or reject."})
    if kind == DecisionKind.REJECT and not comment:
        raise ValidationError({"comment": "Say why the proposal is rejected."})
    if not memory_ids:
        raise ValidationError({"proposals": "Choose at least one proposal."})
    memories = list(
        Memory.objects.select_for_update()
        .filter(team=team, pk__in=set(memory_ids))
        .select_related("repository")
        .only(*_DECIDED_FIELDS)
        .order_by("repository_id", "added_at", "id")
    )
    if len(memories) != len(set(memory_ids)):
        raise ProposalNotOpen({"proposals": "Some proposals no longer exist."})
    pending = set(
        DecisionItem.objects.filter(
            memory__in=memories, decision__state=PushState.PENDING
        ).values_list("memory_id", flat=True)
    )
    for memory in memories:
        if memory.status != MemoryStatus.PROPOSED or memory.pk in pending:
            raise ProposalNotOpen(
                {"proposals": f"{memory.ref} is not waiting for review any more."}
            )
    if kind == DecisionKind.APPROVE:
        _refuse_links_outside_repo(memories)
    secret_refs = [m.ref for m in memories if m.has_secret]
    if kind == DecisionKind.APPROVE and secret_refs and not override_reason:
        raise SecretOverrideRequired(
            {
                "override_reason": (
                    f"{', '.join(secret_refs)} may contain a secret; approving needs an override"
                    " with a reason."
                )
            }
        )
    return memories


def _decision_create(
    *,
    actor: Actor,
    team: Team,
    group: list[Memory],
    kind: str,
    comment: str,
    override_reason: str,
    earlier: dict[int, Approval],
) -> Decision:
    """The decision of one repository: its rows, its audit events and its webhook event."""
    repository = group[0].repository
    author_name, author_email = commit_identity(actor)
    # masked once: the items, the audit summary and the webhook event all show them
    titles = {m.pk: masked_title(m.title) for m in group}
    decision = Decision.objects.create(
        team=team,
        repository=repository,
        kind=kind,
        comment=comment,
        secret_override_reason=override_reason if kind == DecisionKind.APPROVE else "",
        reviewer=actor.user,
        token=actor.token,
        actor_label=actor.label,
        author_name=author_name,
        author_email=author_email,
    )
    bulk_insert(
        DecisionItem,
        (
            DecisionItem(
                decision=decision,
                memory=m,
                memory_key=m.memory_id,
                memory_pk=m.pk,
                ref=m.ref,
                title=titles[m.pk][:1000],  # what history and commits show
                type=m.type,
                body=masked_body(m.body),  # the decided proposal's page shows it, masked
                path=m.path,
                blob_sha=m.blob_sha,
                supersedes=m.supersedes,
                proposed_at=m.added_at,
                first_approval=earlier.get(m.pk),
                **_decided_text(m),
            )
            for m in group
        ),
    )
    refs = [m.ref for m in group]
    verb = "Approved" if kind == DecisionKind.APPROVE else "Rejected"
    what = f"{refs[0]} {titles[group[0].pk]}" if len(group) == 1 else f"{len(group)} proposals"
    audit_record(
        actor=actor,
        action=f"review.{kind}",
        team=team,
        target=decision,
        summary=f"{verb} {what} in {repository.name}",
        data={
            "repository": repository.name,
            "refs": refs,
            "comment": comment,
            "first_approvals": {m.ref: earlier[m.pk].actor_label for m in group if m.pk in earlier},
        },
    )
    if kind == DecisionKind.APPROVE:
        for memory in group:
            if memory.has_secret:
                audit_record(
                    actor=actor,
                    action="review.secret-override",
                    team=team,
                    target=decision,
                    summary=f"Approved {memory.ref} despite a secret finding",
                    data={
                        "ref": memory.ref,
                        "rules": sorted({f["rule"] for f in memory.secret_findings}),
                        "reason": override_reason,
                    },
                )
    _decision_event(decision, group, titles, actor=actor, earlier=earlier)
    return decision


def _refuse_links_outside_repo(memories: list[Memory]) -> None:
    """The index's staleness report flags links that escape the repository (MemoryRail's
    `links` MUST NOT): approving would make such a memory active, so it is refused."""
    outside = [
        f"{m.ref} ({s['link']})"
        for m in memories
        for s in m.stale
        if isinstance(s, dict) and s.get("code") == memoryrail.LINK_OUTSIDE_REPO
    ]
    if outside:
        raise LinkOutsideRepo(
            {
                "proposals": (
                    f"{', '.join(outside)}: the link points outside the repository, so this"
                    " proposal cannot be approved. Reject it, or fix the link upstream."
                )
            }
        )


def _decided_text(memory: Memory) -> dict[str, str]:
    """The text this decision is about, as hashes (what keeps an import from proposing a
    rejected text again)."""
    text_hash, recorded = memory_hashes(
        title=memory.title, body=memory.body, front_matter=memory.front_matter
    )
    return {"content_hash": text_hash, "proposed_hash": recorded}


def _decision_event(
    decision: Decision,
    group: list[Memory],
    titles: dict[int, str],
    *,
    actor: Actor,
    earlier: dict[int, Approval],
) -> None:
    """`decision.made` for the team's webhooks (only a decision: a first approval is not one)."""
    repository = decision.repository
    # The decision's page: it stays when the proposal leaves the index (one reverse, not
    # two per proposal: a batch of 1,000 spent 0.3 s resolving the same URL).
    url = settings.PUBLIC_URL + reverse("decision-detail", args=[decision.team.slug, decision.pk])
    event_emit(
        team=decision.team,
        event=webhook_events.DECISION_MADE,
        data={
            "decision": decision.pk,
            "kind": decision.kind,
            "repository": {"id": repository.pk, "name": repository.name},
            "reviewer": reviewer_username(actor),
            "actor": decision.actor_label,
            "comment": decision.comment,
            "secret_override": bool(decision.secret_override_reason),
            "push_state": decision.state,
            "url": url,
            "proposals": [
                {
                    "id": m.pk,
                    "memory_id": m.memory_id,
                    "ref": m.ref,
                    "type": m.type,
                    "title": titles[m.pk],
                    "path": m.path,
                    "url": f"{url}#item-{m.ref}",
                    "first_approval_by": (earlier[m.pk].actor_label if m.pk in earlier else None),
                }
                for m in group
            ],
        },
    )


def proposal_approve(
    *, actor: Actor, memory: Memory, comment: str = "", override_reason: str = ""
) -> Decision:
    return proposals_review(
        actor=actor,
        team=memory.team,
        memory_ids=[memory.pk],
        kind=DecisionKind.APPROVE,
        comment=comment,
        override_reason=override_reason,
    ).decisions[0]


def proposal_reject(*, actor: Actor, memory: Memory, comment: str) -> Decision:
    return proposals_review(
        actor=actor,
        team=memory.team,
        memory_ids=[memory.pk],
        kind=DecisionKind.REJECT,
        comment=comment,
    ).decisions[0]
