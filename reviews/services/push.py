"""Turn pending decisions into commits and push them, in order, one repository at a time."""

from __future__ import annotations

import contextlib

from django.db import transaction
from django.utils import timezone

from formats import memoryrail
from formats.memoryrail.secrets import secrets_masked
from memoryadmin import errors
from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Scope
from memoryadmin.permissions import actor_require
from memoryadmin.queue import enqueue_on_commit
from reviews.git import MAX_REJECTED_PUSHES, GitError, TransientGitError, WorkingCopy
from reviews.identity import bot_identity
from reviews.models import (
    Decision,
    DecisionItem,
    DecisionKind,
    Memory,
    MemoryStatus,
    PushState,
    Repository,
)
from reviews.services.decision_changes import Conflict, decision_changes
from reviews.services.decisions import ProposalNotOpen
from reviews.services.index import index_read, index_store
from reviews.services.repositories import working_copy
from reviews.task_names import REPOSITORY_PUSH_PENDING
from webhooks import events as webhook_events
from webhooks.emit import event_emit

TRAILER = "Memoryadmin-Decision"


class DecisionNotRetryable(errors.Conflict):
    """A retry cannot help this decision; `code` says why (the API's 409 error code)."""

    code = "decision-not-retryable"


def commit_message(decision: Decision) -> str:
    # values, not instances: 1,000 items with their first approvals took 0.5 s as models
    items = list(
        decision.items.order_by("id").values_list(
            "ref",
            "title",
            "first_approval__approver_key",
            "first_approval__actor_label",
            "first_approval__author_name",
            "first_approval__author_email",
        )
    )
    verb = "Approve" if decision.kind == DecisionKind.APPROVE else "Reject"
    if len(items) == 1:
        lines = [f"{verb} {items[0][0]}: {items[0][1]}"]
    else:
        lines = [f"{verb} {len(items)} proposals", ""]
        lines += [f"- {ref}: {title}" for ref, title, *_ in items]
    if decision.comment:
        lines += ["", decision.comment]
    if decision.secret_override_reason:
        lines += ["", f"Secret finding overridden: {decision.secret_override_reason}"]
    # Two approvals: the second reviewer authors the commit, the first is a co-author.
    # (label, name, email) per first approver, in item order (a LEFT JOIN: None without one)
    firsts = {key: rest for _, _, key, *rest in items if key is not None}
    lines.append("")
    lines += [f"Reviewed-by: {label} (first approval)" for label, _, _ in firsts.values()]
    lines.append(f"Reviewed-by: {decision.actor_label}")
    lines += [f"Co-authored-by: {name} <{email}>" for _, name, email in firsts.values()]
    lines.append(f"{TRAILER}: {decision.pk}")
    # Titles (and a comment or reason quoting them) keep no secret the scanner flags; the
    # trailers match no rule, so the trailer search after a crash still finds the commit.
    return secrets_masked("\n".join(lines) + "\n")


def _already_pushed(copy: WorkingCopy, decision: Decision, head: str) -> str | None:
    """The commit of a decision pushed before a crash kept us from recording it, if any."""
    output = copy.log_grep(f"^{TRAILER}: {decision.pk}$", limit=200, rev=head)
    for sha, email in output:
        if email == decision.author_email:
            return sha
    return None


def push_one(copy: WorkingCopy, decision: Decision) -> None:
    """Make the decision's commit on the remote head from git objects and push it; on a
    moved remote fetch and start over from its new head."""
    found: list[str] = []
    # Its first attempt (the count is raised before each, and stays raised after a crash):
    # no earlier attempt can have pushed it, so the history is not searched for its trailer.
    first = decision.attempts == 0
    tries = 0

    def commit_on(head: str) -> str:
        return copy.commit_objects(
            parent=head,
            changes=decision_changes(
                copy, decision, head, now=memoryrail.format_timestamp(timezone.now())
            ),
            message=commit_message(decision),
            author=(decision.author_name, decision.author_email),
            committer=bot_identity(),
        )

    def attempt() -> tuple[str, str]:
        nonlocal tries
        tries += 1
        copy.ensure_clone()
        if first and tries == 1 and (known := copy.remote_head()):
            # The first try builds on the head this copy last fetched or pushed, without
            # asking the remote: its push lands only while the remote still holds that very
            # commit (else the next try fetches). A conflict is judged on a fetched head only.
            with contextlib.suppress(Conflict):
                return commit_on(known), known
        head = copy.fetch()
        done = None if first else _already_pushed(copy, decision, head)
        if done:
            found.append(done)
            return "", ""
        return commit_on(head), head

    try:  # a first try on the known head is one more than the fetched ones
        sha = copy.push_loop(attempt, attempts=MAX_REJECTED_PUSHES + first)
    except Conflict as exc:
        copy.reset_to_remote()
        decision_finish(decision=decision, state=PushState.CONFLICT, detail=str(exc))
        return
    if sha is None:
        decision_finish(
            decision=decision,
            state=PushState.FAILED,
            detail=f"the remote kept moving; gave up after {MAX_REJECTED_PUSHES} attempts",
        )
        return
    # Nothing written: the decision's commit was already on the remote (found by its trailer).
    decision_finish(decision=decision, state=PushState.PUSHED, commit_sha=sha or found[-1])


def repository_push_pending(*, repository_id: int, wait: float = 120.0) -> int:
    """Push every pending decision of the repository in creation order; return how many ran.

    Transient git errors propagate (the task retries); permanent ones fail the decision.
    Idempotent: with nothing pending it does nothing (and takes no lock).
    """
    if not Decision.objects.filter(repository_id=repository_id, state=PushState.PENDING).exists():
        return 0
    repository = Repository.objects.get(pk=repository_id)
    if not (repository.push_enabled and repository.enabled):
        return 0
    copy = working_copy(repository)
    done = 0
    with copy.locked(wait=wait):
        for decision in Decision.objects.filter(
            repository=repository, state=PushState.PENDING
        ).order_by("id"):
            Decision.objects.filter(pk=decision.pk).update(attempts=decision.attempts + 1)
            try:
                push_one(copy, decision)
            except TransientGitError as exc:
                decision_note(decision=decision, detail=f"retrying: {exc.message}")
                raise
            except GitError as exc:
                decision_finish(decision=decision, state=PushState.FAILED, detail=exc.message)
            done += 1
        snapshot = None
        if done:
            try:
                snapshot = index_read(copy, copy.reset_to_remote(), repository=repository)
            except GitError:  # never fetched (the remote failed at once): the next sync indexes
                snapshot = None
    if snapshot is not None:
        index_store(repository=repository, snapshot=snapshot)
    return done


@transaction.atomic
def decision_finish(
    *, decision: Decision, state: str, commit_sha: str = "", detail: str = ""
) -> Decision:
    decision = (
        Decision.objects.select_for_update(of=("self",))
        .select_related("team", "repository")
        .get(pk=decision.pk)
    )
    if decision.state != PushState.PENDING:
        return decision
    decision.state = state
    decision.commit_sha = commit_sha
    decision.state_detail = detail
    decision.finished_at = timezone.now()
    decision.save(update_fields=["state", "commit_sha", "state_detail", "finished_at"])
    audit_record(
        actor=Actor.system(),
        action=f"review.push-{state}",
        team=decision.team,
        target=decision,
        summary=f"Decision #{decision.pk} {state}" + (f": {detail}" if detail else ""),
        data={"state": state, "commit": commit_sha, "detail": detail},
    )
    if state in (PushState.FAILED, PushState.CONFLICT):
        _push_failed_event(decision)
    return decision


def _push_failed_event(decision: Decision) -> None:
    """`push.failed` for the team's webhooks; the reason is already scrubbed of credentials."""
    repository = decision.repository
    event_emit(
        team=decision.team,
        event=webhook_events.PUSH_FAILED,
        data={
            "decision": decision.pk,
            "kind": decision.kind,
            "repository": {"id": repository.pk, "name": repository.name},
            "branch": repository.branch,
            "state": decision.state,
            "reason": decision.state_detail,
            "attempts": decision.attempts,
            "refs": [item.ref for item in decision.items.all()],
        },
    )


@transaction.atomic
def decision_note(*, decision: Decision, detail: str) -> None:
    Decision.objects.filter(pk=decision.pk, state=PushState.PENDING).update(state_detail=detail)


@transaction.atomic
def decisions_fail_pending(*, repository_id: int, detail: str) -> int:
    """After the last retry of a transient failure: fail what is still pending, visibly."""
    count = 0
    for decision in Decision.objects.filter(repository_id=repository_id, state=PushState.PENDING):
        decision_finish(decision=decision, state=PushState.FAILED, detail=detail)
        count += 1
    return count


@transaction.atomic
def decision_push_retry(*, actor: Actor, decision: Decision) -> Decision:
    """Queue the push of a failed decision again: same decision, commit message and author.

    Only `failed` is retryable. A `conflict` is not: the decision is bound to the blob the
    reviewer saw and upstream no longer has it, so a retry would conflict again (or write a
    decision about content nobody reviewed); that proposal needs a new review. The push task
    re-applies on whatever the remote holds by then and never forces; a commit that landed
    before the failure was recorded is found by its trailer instead of being made twice.
    """
    decision = (
        Decision.objects.select_for_update(of=("self",))
        .select_related("team", "repository")
        .get(pk=decision.pk)
    )
    actor_require(actor, decision.team, Scope.REVIEWS_WRITE)
    if decision.state != PushState.FAILED:
        raise DecisionNotRetryable(_not_retryable_reason(decision), code="decision-not-retryable")
    repository = decision.repository
    if not repository.push_enabled:
        raise DecisionNotRetryable(
            f"Pushing is disabled for {repository.name}; nothing would push decision"
            f" #{decision.pk}.",
            code="push-disabled",
        )
    items = list(decision.items.all())
    _check_still_waiting(decision, items)
    previous = decision.state_detail
    decision.state = PushState.PENDING
    decision.state_detail = f"retry requested by {actor.label}"
    decision.commit_sha = ""
    decision.finished_at = None
    decision.save(update_fields=["state", "state_detail", "commit_sha", "finished_at"])
    refs = [item.ref for item in items]
    audit_record(
        actor=actor,
        action="review.push-retry",
        team=decision.team,
        target=decision,
        summary=f"Retried the push of decision #{decision.pk} ({', '.join(refs)}) in"
        f" {repository.name}" + (f"; it had failed: {previous}" if previous else ""),
        data={
            "repository": repository.name,
            "refs": refs,
            "previous_state": PushState.FAILED,
            "previous_detail": previous,
            "attempts": decision.attempts,
        },
    )
    repository_id = repository.pk
    enqueue_on_commit(REPOSITORY_PUSH_PENDING, repository_id)
    return decision


def _not_retryable_reason(decision: Decision) -> str:
    if decision.state == PushState.CONFLICT:
        return (
            f"Decision #{decision.pk} conflicts with a change upstream ({decision.state_detail});"
            " a retry would conflict again. Review the proposal again on its new content."
        )
    if decision.state == PushState.PUSHED:
        return f"Decision #{decision.pk} is already pushed ({decision.commit_sha[:10]})."
    return f"Decision #{decision.pk} is still being pushed."


def _check_still_waiting(decision: Decision, items: list[DecisionItem]) -> None:
    """Each proposal must still be the one reviewed, waiting, and decided by nobody since.

    Locks the memories as proposals_review does, so a retry and a new decision on the same
    proposal cannot both go through."""
    memories = {
        m.memory_id: m
        for m in Memory.objects.select_for_update().filter(
            repository_id=decision.repository_id, memory_id__in=[i.memory_key for i in items]
        )
    }
    for item in items:
        memory = memories.get(item.memory_key)
        if memory is None or memory.status != MemoryStatus.PROPOSED:
            problem = "is no longer a proposal in the repository"
        elif memory.blob_sha != item.blob_sha:
            problem = "changed upstream after it was reviewed; review it again"
        elif (
            DecisionItem.objects.filter(
                memory=memory, decision__state__in=[PushState.PENDING, PushState.PUSHED]
            )
            .exclude(decision=decision)
            .exists()
        ):
            problem = "was decided again since this decision failed"
        else:
            continue
        raise ProposalNotOpen(
            {"proposals": f"{item.ref} {problem}: decision #{decision.pk} cannot be retried."}
        )
