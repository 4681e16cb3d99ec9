"""Celery wrappers: primary keys in, services do the work."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from bundles import task_names
from memoryadmin.locks import LockBusy
from reviews.git import GitError


@shared_task(name=task_names.IMPORT_JOB_RUN, bind=True, ignore_result=True)
def import_job_run_task(self, job_id: int) -> str:  # type: ignore[no-untyped-def]
    from bundles.imports.jobs import import_job_run

    # Requeued after its worker died (acks_late + reject_on_worker_lost): the job still says
    # "running" but nobody runs it; the import rolled back with the process, so run it again.
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    job = import_job_run(job_id=job_id, reclaim=redelivered)
    return job.state if job is not None else "skipped"


def _proposal_push_failed(  # type: ignore[no-untyped-def]
    self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any
) -> None:
    """After the last retry of a transient failure, the proposal fails visibly."""
    from bundles.models import ProposalState
    from bundles.services.proposals import import_proposal_finish

    if isinstance(exc, LockBusy | GitError):
        proposal_id = kwargs.get("proposal_id") if kwargs else None
        import_proposal_finish(
            proposal_id=proposal_id if proposal_id is not None else args[0],
            state=ProposalState.FAILED,
            detail=str(exc),
        )


@shared_task(
    name=task_names.IMPORT_PROPOSAL_PUSH,
    bind=True,
    ignore_result=True,
    # import_proposal_push re-raises only transient git errors (and a busy lock)
    autoretry_for=(LockBusy, GitError),
    retry_backoff=5,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=6,
    on_failure=_proposal_push_failed,
)
def import_proposal_push_task(self, proposal_id: int) -> str:  # type: ignore[no-untyped-def]
    """Push an import's proposals under the repository lock; retry only transient failures."""
    from bundles.services.proposals import import_proposal_push

    proposal = import_proposal_push(proposal_id=proposal_id)
    return proposal.state if proposal is not None else "gone"


@shared_task(name="bundles.tasks.sweep_import_jobs", ignore_result=True)
def sweep_import_jobs() -> int:
    """Beat: send again the import jobs whose lease expired (lost task, dead worker)."""
    from bundles.imports.jobs import import_jobs_sweep

    return len(import_jobs_sweep())


@shared_task(name="bundles.tasks.prune_withdrawn_chunks", ignore_result=True)
def prune_withdrawn_chunks() -> dict[str, int]:
    """Beat, daily: delete mirror-only chunks withdrawn longer than the retention period."""
    from bundles.services.prune import brain_prune_withdrawn

    results = brain_prune_withdrawn()
    return {
        "teams": len(results),
        "deleted": sum(r.deleted for r in results),
        "failed": sum(1 for r in results if r.error),
    }


@shared_task(
    name=task_names.BRAIN_EMBED,
    ignore_result=True,
    # Another run holds the team's embedding lock: try again, so chunks queued meanwhile land.
    autoretry_for=(LockBusy,),
    retry_backoff=2,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=20,
)
def brain_embed_task(team_id: int) -> dict[str, Any]:
    """Embed the team's chunks that lack a vector of its model (new, dropped, model changed)."""
    from bundles.embeddings.lifecycle import brain_embed

    run = brain_embed(team_id=team_id)
    return {"model": run.model, "embedded": run.embedded, "filled": run.filled, "skip": run.skipped}
