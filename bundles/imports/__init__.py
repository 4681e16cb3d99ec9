"""The importer's interface: a bundle in (a body, a file, a background job), a report out.

Read top-down: this interface → `importer` (one run over `context`) → the sections' writers
(`chunks`, `sections`) → `memoryadmin.bulk`. Files stream through `files`, jobs live in `jobs`,
`report` says what happened, `proposals` sends DNA chunks on to review."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from bundles.imports.context import ImportOptions, Progress
from bundles.imports.files import bundle_import_file, parse_bundle, read_head
from bundles.imports.importer import Importer, bundle_import
from bundles.imports.jobs import (
    import_job_create,
    import_job_run,
    import_jobs_sweep,
    job_progress,
    scratch_orphans_remove,
)
from bundles.imports.proposals import ProposeTargetError, propose_target
from bundles.imports.report import ImportReport, import_failure_record
from bundles.models import ImportJob
from bundles.uploads import Spooled
from memoryadmin.audit import Actor
from memoryadmin.models import Team

__all__ = [
    "ImportOptions",
    "ImportReport",
    "Importer",
    "Progress",
    "ProposeTargetError",
    "bundle_import",
    "bundle_import_file",
    "bundle_import_upload",
    "import_failure_record",
    "import_job_create",
    "import_job_run",
    "import_jobs_sweep",
    "job_progress",
    "parse_bundle",
    "propose_target",
    "read_head",
    "scratch_orphans_remove",
]


def bundle_import_upload(
    *, team: Team, actor: Actor, spooled: Spooled, options: ImportOptions, filename: str = ""
) -> ImportJob | dict[str, Any]:
    """Small bodies import now (the ImportReport); large ones become a job, which then owns
    the scratch file. Any other way out deletes it. Raises ValidationError("malformed-json")
    or BundleError with nothing saved; failures are the caller's to audit."""
    if spooled.path is not None and spooled.size > settings.BUNDLE_SYNC_IMPORT_MAX_BYTES:
        try:
            return import_job_create(
                team=team,
                actor=actor,
                scratch_path=spooled.path,
                size_bytes=spooled.size,
                filename=filename,
                options=options,
            )
        except BaseException:
            spooled.discard()
            raise
    data = spooled.data
    if data is None:
        assert spooled.path is not None
        try:
            data = spooled.path.read_bytes()
        finally:
            spooled.discard()
    bundle = parse_bundle(data)
    return bundle_import(team=team, actor=actor, bundle=bundle, options=options, size=spooled.size)
