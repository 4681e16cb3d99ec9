"""Approve and reject proposals: record the decision at once, commit and push it in a task."""

from __future__ import annotations

from collections import defaultdict
from email.utils import parseaddr

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Team
from memoryadmin.permissions import Action, user_can
from reviews.models import Decision, DecisionItem, DecisionKind, Memory, MemoryStatus, PushState


class SecretOverrideRequired(ValidationError):
    """A proposal with a secret finding needs an explicit, reasoned override to be approved."""


class ProposalNotOpen(ValidationError):
    """The proposal is no longer waiting for review (decided, pending or gone)."""


def bot_identity() -> tuple[str, str]:
    name, email = parseaddr(settings.REVIEW_BOT_IDENTITY)
    return name or "memoryadmin", email or "bot@localhost"


def commit_identity(actor: Actor) -> tuple[str, str]:
    """The commit author: the reviewer; for a token, its creator, else the bot identity."""
    user = actor.user
    if user is None and actor.token is not None:
        user = actor.token.created_by
    if user is None:
        return bot_identity()
    username = user.get_username()
    name = user.get_full_name().strip() if hasattr(user, "get_full_name") else ""
    email = getattr(user, "email", "") or f"{username}@users.memoryadmin.invalid"
    return name or username, email


def _check_actor(actor: Actor, team: Team) -> None:
    if actor.token is not None:
        if actor.token.team_id != team.pk or not actor.token.has_scope("reviews:write"):
            raise PermissionDenied("this token may not decide proposals of this team")
    elif actor.user is not None and not user_can(actor.user, team, Action.REVIEW):
        raise PermissionDenied("your role on this team does not allow reviewing")


@transaction.atomic
def proposals_decide(
    *,
    actor: Actor,
    team: Team,
    memory_ids: list[int],
    kind: str,
    comment: str = "",
    override_reason: str = "",
) -> list[Decision]:
    """Decide one or many proposals: one Decision (one commit) per repository involved."""
    _check_actor(actor, team)
    comment, override_reason = comment.strip(), override_reason.strip()
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
    author_name, author_email = commit_identity(actor)
    by_repository: dict[int, list[Memory]] = defaultdict(list)
    for memory in memories:
        by_repository[memory.repository_id].append(memory)
    decisions = []
    for group in by_repository.values():
        repository = group[0].repository
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
        DecisionItem.objects.bulk_create(
            DecisionItem(
                decision=decision,
                memory=m,
                memory_key=m.memory_id,
                ref=m.ref,
                title=m.title,
                path=m.path,
                blob_sha=m.blob_sha,
                supersedes=m.supersedes,
            )
            for m in group
        )
        refs = [m.ref for m in group]
        verb = "Approved" if kind == DecisionKind.APPROVE else "Rejected"
        what = f"{refs[0]} {group[0].title}" if len(group) == 1 else f"{len(group)} proposals"
        audit_record(
            actor=actor,
            action=f"review.{kind}",
            team=team,
            target=decision,
            summary=f"{verb} {what} in {repository.name}",
            data={"repository": repository.name, "refs": refs, "comment": comment},
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
        repository_id = repository.pk
        transaction.on_commit(lambda rid=repository_id: _queue_push(rid))
        decisions.append(decision)
    return decisions


def _queue_push(repository_id: int) -> None:
    from reviews.tasks import push_repository

    push_repository.delay(repository_id)


def proposal_approve(
    *, actor: Actor, memory: Memory, comment: str = "", override_reason: str = ""
) -> Decision:
    return proposals_decide(
        actor=actor,
        team=memory.team,
        memory_ids=[memory.pk],
        kind=DecisionKind.APPROVE,
        comment=comment,
        override_reason=override_reason,
    )[0]


def proposal_reject(*, actor: Actor, memory: Memory, comment: str) -> Decision:
    return proposals_decide(
        actor=actor,
        team=memory.team,
        memory_ids=[memory.pk],
        kind=DecisionKind.REJECT,
        comment=comment,
    )[0]
