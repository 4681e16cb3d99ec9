"""Every write to a team's brain goes through these functions (keyword-only, atomic, audited)."""

from __future__ import annotations

from bundles.services.chunks import (
    DnaProtectedError,
    brain_settings_set,
    chunk_decay,
    chunk_delete,
    chunk_upsert,
    chunks_expire,
)
from bundles.services.exports import ExportRequest, bundle_export_json, bundle_export_stream
from bundles.services.imports import (
    ImportOptions,
    bundle_import,
    bundle_import_file,
    import_failure_record,
    import_job_create,
    import_job_run,
)
from bundles.services.prune import PruneResult, brain_prune_withdrawn, brain_prune_withdrawn_team

__all__ = [
    "DnaProtectedError",
    "ExportRequest",
    "ImportOptions",
    "PruneResult",
    "brain_prune_withdrawn",
    "brain_prune_withdrawn_team",
    "brain_settings_set",
    "bundle_export_json",
    "bundle_export_stream",
    "bundle_import",
    "bundle_import_file",
    "chunk_decay",
    "chunk_delete",
    "chunk_upsert",
    "chunks_expire",
    "import_failure_record",
    "import_job_create",
    "import_job_run",
]
