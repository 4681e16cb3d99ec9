"""Celery wrappers: primary keys in, services do the work."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="bundles.tasks.import_job_run", bind=True, ignore_result=True)
def import_job_run_task(self, job_id: int) -> str:  # type: ignore[no-untyped-def]
    from bundles.services import import_job_run

    # Requeued after its worker died (acks_late + reject_on_worker_lost): the job still says
    # "running" but nobody runs it; the import rolled back with the process, so run it again.
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    job = import_job_run(job_id=job_id, reclaim=redelivered)
    return job.state if job is not None else "skipped"


@shared_task(
    name="bundles.tasks.import_proposal_push", bind=True, max_retries=6, ignore_result=True
)
def import_proposal_push_task(self, proposal_id: int) -> str:  # type: ignore[no-untyped-def]
    """Push an import's proposals under the repository lock; retry only transient failures."""
    import random

    from bundles.models import ProposalState
    from bundles.services.proposals import import_proposal_finish, import_proposal_push
    from memoryadmin.locks import LockBusy
    from reviews.git import GitError

    try:
        proposal = import_proposal_push(proposal_id=proposal_id)
    except (LockBusy, GitError) as exc:
        if self.request.retries >= self.max_retries:
            import_proposal_finish(
                proposal_id=proposal_id, state=ProposalState.FAILED, detail=str(exc)
            )
            return "failed"
        countdown = min(300.0, 5.0 * 2**self.request.retries) * (0.5 + random.random())
        raise self.retry(exc=exc, countdown=countdown) from exc
    return proposal.state if proposal is not None else "gone"


@shared_task(name="bundles.tasks.sweep_import_jobs", ignore_result=True)
def sweep_import_jobs() -> int:
    """Beat: send again the import jobs whose lease expired (lost task, dead worker)."""
    from bundles.services.imports import import_jobs_sweep

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
