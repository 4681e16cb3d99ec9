"""Celery wrappers: primary keys in, services do the work."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="bundles.tasks.import_job_run", ignore_result=True)
def import_job_run_task(job_id: int) -> str:
    from bundles.services import import_job_run

    job = import_job_run(job_id=job_id)
    return job.state if job is not None else "skipped"
