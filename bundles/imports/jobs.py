"""Background imports: the ImportJob's lifecycle (create, claim, heartbeat, run, fail, sweep)."""

from __future__ import annotations

import logging
import os
import threading
from datetime import datetime, timedelta
from pathlib import Path

from django.core.cache import cache
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from bundles.imports.context import ImportOptions
from bundles.imports.files import bundle_import_file
from bundles.imports.report import _import_event, import_failure_record
from bundles.models import ImportJob, JobState
from bundles.task_names import IMPORT_JOB_RUN
from bundles.uploads import scratch_dir
from formats.memoryai import SECTIONS, BundleError
from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Team
from memoryadmin.queue import enqueue_on_commit

logger = logging.getLogger(__name__)


def progress_key(job_id: int) -> str:
    return f"bundles:import-job:{job_id}:done"


@transaction.atomic
def import_job_create(
    *,
    team: Team,
    actor: Actor,
    scratch_path: Path,
    size_bytes: int,
    filename: str = "",
    options: ImportOptions | None = None,
) -> ImportJob:
    options = options or ImportOptions()
    job = ImportJob.objects.create(
        team=team,
        created_by=actor.user if getattr(actor.user, "pk", None) else None,
        token=actor.token,
        actor_label=actor.label,
        filename=filename[:255],
        scratch_path=str(scratch_path),
        size_bytes=size_bytes,
        keep_embeddings=options.keep_embeddings,
        accept_foreign_embeddings=options.accept_foreign_embeddings,
        propose_to_id=options.propose_to,
        heartbeat_at=timezone.now(),
    )
    audit_record(
        actor=actor,
        action="bundle.import_queued",
        team=team,
        target=job,
        summary=f"Queued a background import of {size_bytes} bytes",
        data={"size_bytes": size_bytes, "filename": filename},
    )
    # Broker down: the upload still answers with its queued job; the sweeper sends it later.
    enqueue_on_commit(IMPORT_JOB_RUN, job.pk)
    return job


class _LeaseLost(Exception):
    """Another runner claimed the job (our lease expired): roll our import back."""


class _Heartbeat:
    """Renew the job's lease from a thread with its own connection while the import runs.

    On SQLite the import holds the only write lock, so a beat may fail; the sweeper's takeover
    needs that lock too, and the job's final state commits with the import, so none is lost."""

    def __init__(self, job_id: int, attempt: int) -> None:
        from django.conf import settings

        self.job_id, self.attempt = job_id, attempt
        self.every = max(0.2, settings.BUNDLE_IMPORT_LEASE_SECONDS / 4)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"import-job-{job_id}", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)

    def _run(self) -> None:
        try:
            while not self.stop.wait(self.every):
                try:
                    ImportJob.objects.filter(
                        pk=self.job_id, attempts=self.attempt, state=JobState.RUNNING
                    ).update(heartbeat_at=timezone.now())
                except DatabaseError:
                    logger.info("import job %s: heartbeat not written", self.job_id)
        finally:
            connection.close()


def _claim(job_id: int, states: list[str]) -> int | None:
    """Compare-and-set: take the job for one more attempt; return that attempt, or None."""
    row = ImportJob.objects.filter(pk=job_id, state__in=states).values("attempts").first()
    if row is None:
        return None
    now = timezone.now()
    claimed = ImportJob.objects.filter(
        pk=job_id, state__in=states, attempts=row["attempts"]
    ).update(state=JobState.RUNNING, started_at=now, heartbeat_at=now, attempts=row["attempts"] + 1)
    return row["attempts"] + 1 if claimed else None


def import_job_run(*, job_id: int, reclaim: bool = False) -> ImportJob | None:
    """Run a queued job once (compare-and-set claim); all-or-nothing, then drop the scratch file.

    `reclaim` also takes a job left "running" by a worker that died (a redelivered task). The
    job's success is committed with the import itself, and only by the attempt that owns it."""
    attempt = _claim(job_id, [JobState.QUEUED, JobState.RUNNING] if reclaim else [JobState.QUEUED])
    if attempt is None:
        return None
    job = ImportJob.objects.select_related("team", "token", "created_by").get(pk=job_id)
    actor = Actor(user=job.created_by, token=job.token)
    path = Path(job.scratch_path)
    key = progress_key(job.pk)
    keep_file = False
    try:
        with _Heartbeat(job.pk, attempt), transaction.atomic():
            result = bundle_import_file(
                team=job.team,
                actor=actor,
                path=path,
                options=ImportOptions(
                    job.keep_embeddings,
                    job.accept_foreign_embeddings,
                    job.propose_to_id,
                    job_id=job.pk,
                ),
                progress=lambda done, total: cache.set(key, [done, total], timeout=3600),
            )
            done = sum(
                sum(counts.values())
                for name, counts in result["report"].items()
                if name in SECTIONS
            )
            owned = ImportJob.objects.filter(
                pk=job.pk, attempts=attempt, state=JobState.RUNNING
            ).update(
                state=JobState.SUCCEEDED,
                report=result,
                records_done=done,
                records_total=done,
                finished_at=timezone.now(),
            )
            if not owned:
                raise _LeaseLost
            _import_event(team=job.team, job_id=job.pk, result=result)
    except _LeaseLost:
        logger.warning("import job %s: attempt %s lost its lease; rolled back", job.pk, attempt)
        keep_file = True  # the attempt that owns the job reads it
    except BundleError as exc:
        _job_failed(job, attempt, actor, exc.code, str(exc))
    except Exception as exc:  # stored and shown; the import itself rolled back
        logger.exception("import job %s failed", job.pk)
        _job_failed(job, attempt, actor, "internal-error", f"{type(exc).__name__}: {exc}")
    finally:
        cache.delete(key)
        if not keep_file:
            _remove(path)
    job.refresh_from_db()
    return job


@transaction.atomic
def _job_failed(job: ImportJob, attempt: int, actor: Actor, code: str, message: str) -> None:
    owned = ImportJob.objects.filter(pk=job.pk, attempts=attempt, state=JobState.RUNNING).update(
        state=JobState.FAILED,
        error_code=code,
        error_message=message[:5000],
        finished_at=timezone.now(),
    )
    if owned:
        import_failure_record(team=job.team, actor=actor, code=code, message=message, job_id=job.pk)


MAX_ATTEMPTS = 5  # a job that kills its worker every time fails visibly instead of looping


def import_jobs_sweep(*, now: datetime | None = None) -> list[int]:
    """Send again every job whose lease expired; return their ids.

    A queued job whose task was never sent (broker down at upload time) or was lost is sent
    again; a running job whose worker stopped beating (killed, on any broker) is queued again.
    """
    from django.conf import settings

    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.BUNDLE_IMPORT_LEASE_SECONDS)
    stale = ImportJob.objects.filter(
        state__in=[JobState.QUEUED, JobState.RUNNING], heartbeat_at__lt=cutoff
    ).values_list("pk", flat=True)
    sent = [job_id for job_id in list(stale) if _job_requeue(job_id=job_id, cutoff=cutoff, now=now)]
    scratch_orphans_remove(now=now)
    return sent


def scratch_orphans_remove(*, now: datetime | None = None) -> list[str]:
    """Delete scratch files older than the lease that no queued or running job reads: what a
    request or worker that died between writing a file and handing it on left behind (every
    path that lives on deletes its own). Returns the names removed."""
    from django.conf import settings

    now = now or timezone.now()
    cutoff = (now - timedelta(seconds=settings.BUNDLE_IMPORT_LEASE_SECONDS)).timestamp()
    folder = scratch_dir()
    owned = {
        os.path.realpath(p)
        for p in ImportJob.objects.filter(
            state__in=[JobState.QUEUED, JobState.RUNNING]
        ).values_list("scratch_path", flat=True)
        if p
    }
    removed = []
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                if entry.stat(follow_symlinks=False).st_mtime >= cutoff:
                    continue  # still being written, or about to be handed to a job
                if os.path.realpath(entry.path) in owned:
                    continue
                os.unlink(entry.path)
            except FileNotFoundError:
                continue
            removed.append(entry.name)
    if removed:
        logger.warning("removed %d orphan import scratch files: %s", len(removed), removed[:20])
    return removed


@transaction.atomic
def _job_requeue(*, job_id: int, cutoff: datetime, now: datetime) -> bool:
    job = (
        ImportJob.objects.select_for_update()
        .select_related("team")
        .filter(pk=job_id, state__in=[JobState.QUEUED, JobState.RUNNING], heartbeat_at__lt=cutoff)
        .first()
    )
    if job is None:
        return False
    # Compare-and-set on what was read: SQLite has no row lock, and the job may have just
    # been claimed or finished (its success commits with the import).
    unchanged = ImportJob.objects.filter(
        pk=job.pk, state=job.state, attempts=job.attempts, heartbeat_at__lt=cutoff
    )
    if job.state == JobState.RUNNING and job.attempts >= MAX_ATTEMPTS:
        message = f"the worker stopped during each of {job.attempts} attempts"
        if not unchanged.update(
            state=JobState.FAILED, error_code="worker-lost", error_message=message, finished_at=now
        ):
            return False
        import_failure_record(
            team=job.team, actor=Actor.system(), code="worker-lost", message=message, job_id=job.pk
        )
        return True
    was = job.state
    if not unchanged.update(state=JobState.QUEUED, heartbeat_at=now):
        return False
    audit_record(
        actor=Actor.system(),
        action="bundle.import_requeued",
        team=job.team,
        target=job,
        summary=(
            f"Import #{job.pk} sent to a worker again (it was {was}, no sign of life since "
            f"{cutoff:%Y-%m-%d %H:%M:%S} UTC)"
        ),
        data={"was": was, "attempts": job.attempts},
    )
    enqueue_on_commit(IMPORT_JOB_RUN, job_id)
    return True


def _remove(path: Path) -> None:
    try:
        if path.is_relative_to(scratch_dir()):
            os.unlink(path)
    except FileNotFoundError:
        pass


def job_progress(job: ImportJob) -> tuple[int, int]:
    """(records done, records expected) — live from the cache while the job runs."""
    if job.state == JobState.RUNNING:
        value = cache.get(progress_key(job.pk))
        if isinstance(value, list) and len(value) == 2:
            return int(value[0]), int(value[1])
        return 0, 0
    return job.records_done, job.records_total
