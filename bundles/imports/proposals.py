"""Out of the brain, into review: an import's DNA chunks proposed to a team repository."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from bundles.imports.context import ImportContext
from bundles.models import ImportProposal, ProposalState
from bundles.task_names import IMPORT_PROPOSAL_PUSH
from formats.memoryai import ChunkRecord
from memoryadmin.audit import Actor, audit_record
from memoryadmin.errors import DomainError, NotFound, Unprocessable
from memoryadmin.models import Team
from memoryadmin.queue import enqueue_on_commit
from memoryadmin.templatetags.memoryadmin_format import counted

PROPOSE_MAX = 200  # per import: a review queue is read by people


class ProposeTargetError(DomainError):
    """The repository named by `propose_to` cannot take proposals from this team."""

    code = "bad-request"
    details = {"param": "propose_to"}


class ProposeTargetMissing(NotFound, ProposeTargetError):
    code = "repository-not-found"


class ProposeTargetNotPushed(Unprocessable, ProposeTargetError):
    code = "repository-push-disabled"


def propose_target(*, team: Team, repository_id: Any) -> int:
    """Check `propose_to`: a repository of this team with push enabled; return its id."""
    from reviews.models import Repository

    try:
        pk = int(str(repository_id))
    except ValueError as exc:
        raise ProposeTargetError("propose_to must be a repository id") from exc
    repository = Repository.objects.filter(pk=pk, team=team).first()
    if repository is None:
        raise ProposeTargetMissing(f"This team has no repository with id {pk}.")
    if not repository.push_enabled:
        raise ProposeTargetNotPushed(f"Pushing is disabled for repository {pk}.")
    return pk


class ImportProposalDrafts:
    """An import's DNA chunks drafted as proposals while the import runs, a group of
    PROPOSE_MAX at a time, so texts the repository has seen (held, waiting, approved or
    rejected) are counted in the report and never use up the limit of PROPOSE_MAX drafts."""

    def __init__(self, *, team: Team, actor: Actor, repository_id: int) -> None:
        from reviews.models import Repository
        from reviews.services.agent_proposals import DraftResult

        self.repository_id = repository_id
        self.repository = Repository.objects.filter(pk=repository_id, team=team).first()
        self.usable = self.repository is not None and self.repository.push_enabled
        self.now = timezone.now()
        self.provenance = {
            "origin": "import",
            "imported_by": actor.label,
            "imported_at": self.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        self.waiting = _waiting_hashes(repository_id) if self.usable else set()
        self.taken_ids: set[str] = set()
        self.pending: list[Any] = []
        self.result = DraftResult()
        self.candidates = 0
        self.overflow = 0

    def add(self, chunk: Any) -> None:
        self.candidates += 1
        if not self.usable:
            return
        if len(self.result.drafts) >= PROPOSE_MAX:
            self.overflow += 1
            return
        self.pending.append(chunk)
        if len(self.pending) >= PROPOSE_MAX:
            self.flush()

    def flush(self) -> None:
        """Draft the pending chunks; drafts past the limit count as left out."""
        from reviews.services.agent_proposals import proposal_drafts

        if not self.pending or not self.usable:
            self.pending = []
            return
        part = proposal_drafts(
            repository=self.repository,  # type: ignore[arg-type]
            chunks=self.pending,
            provenance=self.provenance,
            now=self.now,
            waiting=self.waiting,
            taken_ids=self.taken_ids,
        )
        self.pending = []
        kept = part.drafts[: PROPOSE_MAX - len(self.result.drafts)]
        self.overflow += len(part.drafts) - len(kept)
        self.result.drafts.extend(kept)
        self.result.existing += part.existing
        self.result.rejected.extend(part.rejected)
        self.result.secrets.extend(part.secrets)
        self.result.invalid.extend(part.invalid)
        self.waiting |= {draft["content_hash"] for draft in kept}
        self.taken_ids |= {draft["memory_id"] for draft in kept}


def import_proposals_create(
    *, team: Team, actor: Actor, drafts: ImportProposalDrafts
) -> tuple[dict[str, Any], list[str]]:
    """Store the drafted proposals (inside the import's transaction) and queue the push.

    Returns the report section and its warnings. Chunks with a secret finding are not written.
    """
    from reviews.identity import agent_identity

    drafts.flush()
    repository, result, overflow = drafts.repository, drafts.result, drafts.overflow
    summary: dict[str, Any] = {
        "repository": drafts.repository_id,
        "candidates": drafts.candidates,
        "proposed": 0,
        "skipped_existing": 0,
        "skipped_rejected": 0,
        "skipped_secret": 0,
        "skipped_invalid": 0,
        "skipped_limit": overflow,
        "proposal": None,
    }
    warnings: list[str] = []
    if repository is None or not drafts.usable:
        warnings.append(
            f"propose_to: repository {drafts.repository_id} cannot take proposals any more"
        )
        return summary, warnings
    summary.update(
        proposed=len(result.drafts),
        skipped_existing=result.existing,
        skipped_rejected=len(result.rejected),
        skipped_secret=len(result.secrets),
        skipped_invalid=len(result.invalid),
    )
    for label, decided in result.rejected:
        reason = f": {_one_line(decided.comment)}" if decided.comment else ""
        warnings.append(
            f"{label}: not proposed to {repository.name}: rejected as {decided.ref} by "
            f"{decided.actor_label} on {decided.decided_at:%Y-%m-%d} (decision "
            f"#{decided.decision_id}){reason}"
        )
    for label, rules in result.secrets:
        warnings.append(
            f"{label}: not proposed to {repository.name}: possible secret ({', '.join(rules)})"
        )
    for label, reason in result.invalid:
        warnings.append(f"{label}: not proposed to {repository.name}: {reason}")
    if overflow:
        warnings.append(
            f"{counted(overflow, 'more DNA chunk')} {'was' if overflow == 1 else 'were'} not "
            f"proposed: at most {PROPOSE_MAX} per import"
        )
    if not result.drafts:
        return summary, warnings
    author = agent_identity(token=actor.token, user=actor.user, label=actor.label)
    proposal = ImportProposal.objects.create(
        team=team,
        repository=repository,
        token=actor.token,
        created_by=actor.user if getattr(actor.user, "pk", None) else None,
        actor_label=actor.label,
        author_name=author[0][:200],
        author_email=author[1][:200],
        items=result.drafts,
    )
    summary["proposal"] = proposal.pk
    audit_record(
        actor=actor,
        action="brain.propose",
        team=team,
        target=proposal,
        summary=(
            f"Proposing {counted(len(result.drafts), 'imported memory,imported memories')} "
            f"to {repository.name}"
        ),
        data={**summary, "memory_ids": [d["memory_id"] for d in result.drafts]},
    )
    enqueue_on_commit(IMPORT_PROPOSAL_PUSH, proposal.pk)
    return summary, warnings


def _waiting_hashes(repository_id: int) -> set[str]:
    """Texts of earlier imports still on their way into the repository (not pushed yet)."""
    waiting: set[str] = set()
    for items in ImportProposal.objects.filter(
        repository_id=repository_id, state=ProposalState.PENDING
    ).values_list("items", flat=True):
        waiting.update(i["content_hash"] for i in items if isinstance(i.get("content_hash"), str))
    return waiting


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class ImportProposals:
    """The import's side of `propose_to`: DNA chunks drafted while the chunks are written,
    stored as one proposal (and its push queued) when the import finishes."""

    def __init__(self, ctx: ImportContext) -> None:
        self.ctx = ctx
        self.drafts: ImportProposalDrafts | None = None

    def collect(self, index: int, record: ChunkRecord) -> None:
        ctx = self.ctx
        if ctx.options.propose_to is None or not record.is_dna:
            return
        from reviews.services.agent_proposals import ChunkToPropose

        if self.drafts is None:
            self.drafts = ImportProposalDrafts(
                team=ctx.team, actor=ctx.actor, repository_id=ctx.options.propose_to
            )
        self.drafts.add(
            ChunkToPropose(
                label=f"chunks[{index}]",
                content=record.content,
                content_hash=record.content_hash,
                memory_type=record.memory_type,
                tags=list(record.tags),
                is_pinned=record.is_pinned,
                created_at=record.created_at,
            )
        )

    def propose(self) -> dict[str, Any] | None:
        ctx = self.ctx
        if ctx.options.propose_to is None:
            return None
        drafts = self.drafts or ImportProposalDrafts(
            team=ctx.team, actor=ctx.actor, repository_id=ctx.options.propose_to
        )
        summary, warnings = import_proposals_create(team=ctx.team, actor=ctx.actor, drafts=drafts)
        for warning in warnings:
            ctx.report.warn(warning)
        return summary
