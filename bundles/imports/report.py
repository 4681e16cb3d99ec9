"""What an import tells: the ImportReport, its audit event and its `import.finished` webhook."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from formats.memoryai import SECTIONS
from memoryadmin.audit import Actor, audit_record
from memoryadmin.models import Team
from memoryadmin.templatetags.memoryadmin_format import counted
from webhooks import events as webhook_events
from webhooks.emit import event_emit

MAX_WARNINGS = 100


@dataclass
class ImportReport:
    bundle_format: str
    bundle_version: int
    embedding_model_match: bool = False
    counts: dict[str, dict[str, int]] = field(
        default_factory=lambda: {
            "chunks": {"inserted": 0, "skipped_duplicate": 0, "skipped_invalid": 0},
            "memory_edges": {"upserted": 0, "skipped": 0},
            "entities": {"upserted": 0},
            "l2_sessions": {"inserted": 0},
            "mood_states": {"upserted": 0},
            "agents": {"upserted": 0},
        }
    )
    # Warnings by section (None: the wrap-up's), reported in SECTIONS order whatever order
    # the file's sections came in, so the report does not depend on the file's key order.
    section: str | None = None
    buckets: dict[str | None, list[str]] = field(default_factory=dict)
    omitted: dict[str | None, int] = field(default_factory=dict)

    def warn(self, message: str) -> None:
        bucket = self.buckets.setdefault(self.section, [])
        if len(bucket) < MAX_WARNINGS:
            bucket.append(message)
        else:
            self.omitted[self.section] = self.omitted.get(self.section, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        warnings: list[str] = []
        omitted = 0
        for name in (*SECTIONS, None):
            for message in self.buckets.get(name, ()):
                if len(warnings) < MAX_WARNINGS:
                    warnings.append(message)
                else:
                    omitted += 1
            omitted += self.omitted.get(name, 0)
        if omitted:
            verb = "was" if omitted == 1 else "were"
            warnings.append(f"{counted(omitted, 'more warning')} {verb} left out of this report")
        return {
            "success": True,
            "report": {
                "bundle_format": self.bundle_format,
                "bundle_version": self.bundle_version,
                "embedding_model_match": self.embedding_model_match,
                **{name: dict(values) for name, values in self.counts.items()},
                "warnings": warnings,
            },
        }


def _audit_import(
    *, team: Team, actor: Actor, result: dict[str, Any], source: str, size: int | None
) -> None:
    report = result["report"]
    chunks = report["chunks"]
    audit_record(
        actor=actor,
        action="bundle.import",
        team=team,
        target_type="bundles.brain",
        target_id=team.pk,
        summary=(
            f"Imported a bundle ({source}): {counted(chunks['inserted'], 'chunk')} inserted, "
            f"{counted(chunks['skipped_duplicate'], 'duplicate')}, "
            f"{chunks['skipped_invalid']} invalid, "
            f"{counted(report['memory_edges']['upserted'], 'edge')}, "
            f"{counted(len(report['warnings']), 'warning')}"
        ),
        data={"source": source, "size_bytes": size, **result},
    )


def import_failure_record(
    *, team: Team, actor: Actor, code: str, message: str, job_id: int | None = None
) -> None:
    """Audit a refused or failed import (its own transaction, after the import rolled back)."""
    with transaction.atomic():
        audit_record(
            actor=actor,
            action="bundle.import_failed",
            team=team,
            target_type="bundles.brain",
            target_id=team.pk,
            summary=f"Bundle import failed: {code}: {message}"[:500],
            data={"code": code, "message": message[:2000]},
        )
        _import_event(team=team, job_id=job_id, error=(code, message))


_OMITTED_WARNINGS = re.compile(r"^(\d+) more warnings? (?:was|were) left out")


def _import_event(
    *,
    team: Team,
    job_id: int | None,
    result: dict[str, Any] | None = None,
    error: tuple[str, str] | None = None,
) -> None:
    """`import.finished` for the team's webhooks: the report's numbers, or the error."""
    data: dict[str, Any] = {"job": job_id, "success": error is None}
    if result is not None:
        report = result["report"]
        data["counts"] = {
            name: report[name]
            for name in (*SECTIONS, "proposals")
            if isinstance(report.get(name), dict)
        }
        warnings = list(report["warnings"])
        omitted = _OMITTED_WARNINGS.match(warnings[-1]) if warnings else None
        data["warnings"] = len(warnings) - 1 + int(omitted.group(1)) if omitted else len(warnings)
        data["embedding_model_match"] = report["embedding_model_match"]
    if error is not None:
        data["error"] = {"code": error[0], "message": error[1][:2000]}
    event_emit(team=team, event=webhook_events.IMPORT_FINISHED, data=data)
