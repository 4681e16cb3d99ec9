"""propose_memory: an agent writes what it learned as a MemoryRail file in a team repository.

The file is `status: "proposed"` where the repository's review is `agents` and the type is
durable (MemoryRail 1, "Review gate"), else `active`. Text that looks like a credential is
refused naming the rule (never the value); links that escape the repository are refused. The
file is committed as the token's person (the bot identity for team tokens) and pushed by the
worker through the same path as an import's proposals (`ImportProposal` + the
`bundles.tasks.import_proposal_push` task → `reviews.services.proposals.proposals_push`), so it
lands in the review queue like any agent proposal.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import datetime
from typing import Any

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from bundles.agents.errors import AgentError
from bundles.agents.readmodel import clean_list, clean_text, team_repository
from bundles.models import ImportProposal, ProposalState
from bundles.task_names import IMPORT_PROPOSAL_PUSH
from formats import memoryrail
from formats.memoryrail import DURABLE_TYPES, TYPE_PREFIXES
from formats.memoryrail.fields import check_link
from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Team
from memoryadmin.queue import enqueue_on_commit
from reviews.models import Memory

MAX_TITLE_CHARS = 200
MAX_BODY_CHARS = 20_000
MAX_LINKS = 50
MAX_TAGS = 20


def _slug(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:40].strip("-") or "memory"


def _commit_identity(actor: Actor) -> tuple[str, str]:
    # Moves to reviews/identity.py in the house refactor (issue #14): a one-line change.
    from reviews.identity import commit_identity

    return commit_identity(actor)


def _may_write_active(actor: Actor, team: Team) -> bool:
    """An unreviewed (active) write needs what approving needs: the review role."""
    from memoryadmin.models import TokenKind
    from memoryadmin.permissions import Action, token_has_scope, user_can

    token = actor.token
    if token is not None:
        if token.kind == TokenKind.TEAM:
            return token_has_scope(token, "reviews:write")
        return token.created_by is not None and user_can(token.created_by, team, Action.REVIEW)
    return actor.user is not None and user_can(actor.user, team, Action.REVIEW)


@transaction.atomic
def propose_memory(
    *,
    actor: Actor,
    team: Team,
    repository: Any,
    type: Any,
    title: Any,
    body: Any = "",
    links: Any = None,
    tags: Any = None,
    supersedes: Any = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Render, check and queue one memory file; returns its id, ref, state and page URL."""
    now = now or timezone.now()
    repo = team_repository(team, repository)
    if repo is None:
        raise AgentError(400, "repository-required", "Name the repository to propose to.")
    if not repo.push_enabled:
        raise AgentError(
            422, "repository-push-disabled", f"Pushing is disabled for repository {repo.name}."
        )
    kind = clean_text(type, field="type", max_chars=16)
    if kind not in TYPE_PREFIXES:
        raise AgentError(
            400,
            "type-unknown",
            f"type is one of {', '.join(TYPE_PREFIXES)}.",
            {"known": list(TYPE_PREFIXES)},
        )
    title = clean_text(title, field="title", max_chars=MAX_TITLE_CHARS)
    if "\n" in title or "\r" in title:
        raise AgentError(400, "title-invalid", "title is one line.")
    body = clean_text(body, field="body", max_chars=MAX_BODY_CHARS, required=False)
    links = clean_list(links, field="links", max_items=MAX_LINKS, max_chars=1000)
    for link in links:
        problem = check_link(link)
        if problem is not None:
            raise AgentError(
                400,
                problem,
                "links must be repo-relative POSIX paths inside the repository.",
                {"link": link},
            )
    tags = clean_list(tags, field="tags", max_items=MAX_TAGS, max_chars=64)
    supersedes = clean_text(supersedes, field="supersedes", max_chars=255, required=False)
    if supersedes:
        old = Memory.objects.filter(repository=repo, memory_id=supersedes).first()
        if old is None or old.status != "active":
            raise AgentError(
                404,
                "supersedes-not-found",
                "supersedes names no active memory of this repository.",
                {"supersedes": supersedes},
            )
    status = "proposed" if repo.review_mode == "agents" and kind in DURABLE_TYPES else "active"
    if status == "active" and not _may_write_active(actor, team):
        raise AgentError(
            403,
            "review-role-required",
            f"{repo.name} does not review agent writes of a {kind}: writing it active needs a "
            "reviewer (a personal token of a reviewer, or a team token with reviews:write).",
        )
    if supersedes and status != "proposed":
        # Superseding rewrites the old file too; without review that is a reviewer's job.
        raise AgentError(
            422,
            "supersedes-needs-review",
            "This repository does not review agent writes: supersede in a reviewed commit.",
        )
    digest = hashlib.sha256(f"{kind}\n{title}\n{body}".encode()).hexdigest()
    memory_id = f"{now:%Y%m%d}-{_slug(title)}-{digest[:8]}"
    stamp = memoryrail.format_timestamp(now)
    meta: dict[str, Any] = {
        "id": memory_id,
        "type": kind,
        "title": title,
        "status": status,
        "created": stamp,
        "updated": stamp,
    }
    if tags:
        meta["tags"] = tags
    if links:
        meta["links"] = links
    if supersedes:
        meta["supersedes"] = supersedes
    path = f"{memoryrail.MEMORIES_DIR}/{memory_id}.md"
    try:
        text = memoryrail.render(meta, body + "\n" if body else "")
    except memoryrail.WriteError as exc:
        raise AgentError(400, "memory-invalid", str(exc)) from None
    parsed, problems = memoryrail.parse_memory(text, path=path)
    if parsed is None:
        codes = sorted({p.code for p in problems})
        raise AgentError(400, "memory-invalid", "The memory is not valid MemoryRail.", codes)
    findings = memoryrail.scan_text(text, path=path)
    if findings:
        rules = sorted({f.rule for f in findings})
        raise AgentError(
            422,
            "secret-detected",
            f"This text looks like a credential ({', '.join(rules)}); it was not written.",
            {"rules": rules},
        )
    waiting = ImportProposal.objects.filter(repository=repo, state=ProposalState.PENDING)
    waiting_ids = {
        i.get("memory_id") for items in waiting.values_list("items", flat=True) for i in items
    }
    if (
        memory_id in waiting_ids
        or Memory.objects.filter(repository=repo, memory_id=memory_id).exists()
    ):
        raise AgentError(
            409, "already-proposed", "This memory is already proposed to this repository."
        )
    author = _commit_identity(actor)
    item = {
        "memory_id": memory_id,
        "path": path,
        "text": text,
        "content_hash": digest,
        "title": title,
        "type": kind,
    }
    proposal = ImportProposal.objects.create(
        team=team,
        repository=repo,
        token=actor.token,
        created_by=actor.user if getattr(actor.user, "pk", None) else None,
        actor_label=actor.label,
        author_name=author[0][:200],
        author_email=author[1][:200],
        items=[item],
    )
    ref = memoryrail.short_ref(memory_id, kind)
    audit_record(
        actor=actor,
        action="agents.propose",
        team=team,
        target=proposal,
        summary=f"Proposed {ref} ({kind}) to {repo.name}",
        data={"repository": repo.pk, "memory_id": memory_id, "ref": ref, "status": status},
    )
    enqueue_on_commit(IMPORT_PROPOSAL_PUSH, proposal.pk)
    return {
        "id": memory_id,
        "ref": ref,
        "cite": f"[per {ref}]",
        "status": status,
        "repository": repo.name,
        "path": path,
        "push": {"proposal": proposal.pk, "state": proposal.state},
        "review_url": reverse("review-queue", kwargs={"team_slug": team.slug}),
    }
