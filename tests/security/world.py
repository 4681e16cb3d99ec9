"""Two teams with one of everything each, built through the real services."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from bundles.imports import bundle_import
from bundles.models import Chunk, ImportJob, ImportRun
from memoryadmin.audit import Actor
from memoryadmin.invitations import invitation_create
from memoryadmin.models import ApiToken, AuditEvent, Invitation, Membership, Team
from reviews.models import Decision, Memory, Repository
from reviews.services.decisions import proposal_reject
from reviews.services.push import repository_push_pending
from reviews.services.repositories import repository_create, repository_sync
from sources.models import RefreshRun, Source
from sources.services.lifecycle import source_add, source_approve, source_refresh_request
from sources.services.refresh import source_refresh
from tests.bundles.helpers import chunk, make_bundle
from tests.reviews.conftest import M, make_remote, memory_text
from tests.sources.helpers import record_text, write_source
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services.endpoints import endpoint_create, endpoint_ping


@dataclass
class TeamObjects:
    team: Team
    source: Source
    run: RefreshRun
    repository: Repository
    proposal: Memory
    decision: Decision
    rejection: Decision  # pushed: a rejection imports respect until a reviewer lifts it
    job: ImportJob
    endpoint: WebhookEndpoint
    delivery: WebhookDelivery
    token: ApiToken
    chunk: Chunk
    import_run: ImportRun
    membership: Membership
    invitation: Invitation
    secrets: dict[str, str] = field(default_factory=dict)

    def ids(self) -> dict[str, Any]:
        """URL kwargs that name this team's objects."""
        return {
            "team_slug": self.team.slug,
            "token_id": self.token.pk,
            "membership_id": self.membership.pk,
            "invitation_id": self.invitation.pk,
            "secret": self.secrets["invitation"],
            "source_id": self.source.pk,
            "run_id": self.run.pk,
            "memory_pk": self.proposal.pk,
            "repository_pk": self.repository.pk,
            "job_id": self.job.pk,
            "chunk_id": self.chunk.pk,
            "import_id": self.import_run.pk,
            "endpoint_id": self.endpoint.pk,
            "delivery_id": self.delivery.pk,
            "decision_pk": self.decision.pk,
            "pk": None,  # per API view, see api_pk()
            "key": self.proposal.memory_id,
            "ref": self.proposal.memory_id,
        }


def build_team(
    team: Team,
    admin: Any,
    root: Path,
    *,
    label: str,
    body: str = "Plain body.\n",
    credential: Any = None,
    repo_token: str = "",
    webhook_url: str = "",
) -> TeamObjects:
    actor = Actor(user=admin)
    source_dir = write_source(
        root / f"source-{label}",
        {f"{label}-rec": record_text(f"{label}-rec", title=f"{label} record", body=body)},
    )
    with transaction.atomic():
        source = source_add(actor=actor, team=team, location=str(source_dir), credential=credential)
    source_approve(actor=actor, source=source)
    run = source_refresh_request(actor=actor, source=source)
    source_refresh(source_id=source.pk, run_id=run.pk)
    source.refresh_from_db()

    remote = make_remote(root / f"git-{label}")
    proposal_id = f"20260301-{label}-only"
    remote.commit(
        {
            f"{M}/{proposal_id}.md": memory_text(
                proposal_id, title=f"{label} proposal", status="proposed", body=body
            )
        },
        f"propose {label}",
    )
    with transaction.atomic():
        repository = repository_create(
            actor=actor,
            team=team,
            name=f"repo-{label}",
            remote_url=remote.url,
            credential_kind="https-token" if repo_token else "none",
            credential_username="x-access-token" if repo_token else "",
            credential_secret=repo_token,
            allow_local=True,
        )
    repository_sync(repository_id=repository.pk)
    repository.refresh_from_db()
    proposal = Memory.objects.get(repository=repository, memory_id=proposal_id)
    rejected = Memory.objects.get(repository=repository, memory_id="20260203-cache-attempt")
    decision = proposal_reject(actor=actor, memory=rejected, comment="no")
    # Its push is refused by the remote (real git, a pre-receive hook): a decision to retry.
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'frozen' >&2\nexit 1\n")
    hook.chmod(0o755)
    repository_push_pending(repository_id=repository.pk)
    hook.unlink()
    decision.refresh_from_db()
    assert decision.state == "failed", decision.state_detail
    secret = Memory.objects.get(repository=repository, memory_id="20260202-deploy-key")
    rejection = proposal_reject(actor=actor, memory=secret, comment="no")
    repository_push_pending(repository_id=repository.pk)
    rejection.refresh_from_db()
    assert rejection.state == "pushed", rejection.state_detail

    bundle_import(
        team=team,
        actor=actor,
        bundle=make_bundle(chunks=[chunk(1, f"{label} chunk: {body}")]),
    )
    brain_chunk = Chunk.objects.filter(team=team).first()
    job = ImportJob.objects.create(team=team, created_by=admin, state="succeeded", report={})

    endpoint, hook_secret = endpoint_create(
        actor=actor,
        team=team,
        url=webhook_url or f"https://hooks-{label}.example.org/in",
        events=[],
    )
    delivery = endpoint_ping(actor=actor, endpoint=endpoint)

    from memoryadmin.tokens import token_create

    token, token_secret = token_create(
        actor=actor, team=team, name=f"{label}-token", scopes=["sources:read"]
    )
    with transaction.atomic():
        invitation, invite_url = invitation_create(
            actor=actor,
            team=team,
            email=f"newcomer@{label}.example.org",
            role="viewer",
            link=lambda secret: secret,
        )
    assert brain_chunk is not None
    return TeamObjects(
        team=team,
        source=source,
        run=run,
        repository=repository,
        proposal=proposal,
        decision=decision,
        rejection=rejection,
        job=job,
        endpoint=endpoint,
        delivery=delivery,
        token=token,
        chunk=brain_chunk,
        import_run=ImportRun.objects.get(team=team),
        membership=Membership.objects.get(team=team, user=admin),
        invitation=invitation,
        secrets={"webhook": hook_secret, "token": token_secret, "invitation": invite_url},
    )


def audit_ids(team: Team) -> list[int]:
    return list(AuditEvent.objects.filter(team=team).values_list("pk", flat=True))
