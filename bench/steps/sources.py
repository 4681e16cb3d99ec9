"""Source steps: a local source, its refresh, and the read + parse baseline."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.steps.helpers import _team
from bench.steps.measure import Probe

# -- sources --------------------------------------------------------------------------------


@contextmanager
def embedding_deferred() -> Iterator[None]:
    """Leave the chunks a step creates unembedded. The bench runs tasks eagerly, so the run a
    mirror queues on commit would embed every new chunk inside the timed section (10,000
    records: 330 s of the model on this CPU); a worker does that afterwards, and its speed
    is the semantic bench's row (bench/semantic), not this one's."""
    from django.test import override_settings

    with override_settings(SEMANTIC_ENABLED=False):
        yield


def source_setup(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    from django.utils import timezone

    from sources.models import Source, SourceKind, SourceState

    team = _team(args["team"])
    Source.objects.filter(team=team).delete()
    source = Source.objects.create(
        team=team,
        kind=SourceKind.LOCAL,
        identity=str(Path(args["path"]).resolve()),
        state=SourceState.APPROVED,
        approved_at=timezone.now(),
    )
    return {"source_id": source.pk}


def source_refresh(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    from sources.services.refresh import source_refresh as refresh

    with embedding_deferred(), probe():
        run = refresh(source_id=args["source_id"])
    if run.status != "succeeded":
        raise RuntimeError(f"refresh {run.status}: {run.error_code} {run.error}")
    return {"records": run.record_count, "parsed": run.parsed_count, "reused": run.reused_count}


def source_baseline(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """Read the same files and parse their front matter with the strict reader alone."""
    from formats import frontmatter

    root = Path(args["path"])
    with probe():
        manifest = json.loads((root / "memories.json").read_bytes())
        for entry in manifest["memories"]:
            frontmatter.parse((root / entry["path"]).read_bytes())
    return {"records": len(manifest["memories"])}
