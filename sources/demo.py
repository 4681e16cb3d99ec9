"""A sample local OpenMemories source for the demo team (idempotent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from memoryadmin.audit import Actor
from memoryadmin.models import Team
from sources.fetchers.read import normalize_location
from sources.models import Source, SourceState
from sources.services.lifecycle import source_add, source_approve
from sources.services.refresh import source_refresh

HEADER = """---
openmemories: '0.1'
id: '{id}'
title: '{title}'
kind: '{kind}'
scope: '{scope}'
created: '2026-01-05T09:00:00Z'
updated: '{updated}'
{extra}---

{body}
"""
PROJECT = "https://example.org/demo/project"
RECORDS: dict[str, str] = {
    "records/test-command.md": HEADER.format(
        id="test-command",
        title="Project test command",
        kind="project",
        scope=PROJECT,
        updated="2026-01-05T09:00:00Z",
        extra="tags: ['testing']\n",
        body="Run `make test` before proposing a change. The suite needs no network.",
    ),
    "records/tone.md": HEADER.format(
        id="tone",
        title="Preferred tone",
        kind="preference",
        scope="user",
        updated="2026-01-05T09:00:00Z",
        extra="provenance:\n  author: 'Demo admin'\n",
        body="Keep answers short and say what you did not check.",
    ),
    "records/deploy-old.md": HEADER.format(
        id="deploy-old",
        title="Deploy procedure (old)",
        kind="procedure",
        scope=PROJECT,
        updated="2026-01-05T09:00:00Z",
        extra="",
        body="Deploy by copying files to the server.",
    ),
    "records/deploy.md": HEADER.format(
        id="deploy",
        title="Deploy procedure",
        kind="procedure",
        scope=PROJECT,
        updated="2026-02-01T10:00:00Z",
        extra="supersedes: ['deploy-old']\n",
        body="Deploy by tagging a release; CI builds and ships the image.",
    ),
    "records/freeze-2025.md": HEADER.format(
        id="freeze-2025",
        title="Winter change freeze",
        kind="fact",
        scope=PROJECT,
        updated="2026-01-05T09:00:00Z",
        extra="expires: '2026-01-06T00:00:00Z'\n",
        body="No deploys until January 6th.",
    ),
    "records/duplicate-key.md": HEADER.format(
        id="duplicate-key",
        title="Broken on purpose",
        kind="fact",
        scope="user",
        updated="2026-01-05T09:00:00Z",
        extra="kind: 'fact'\n",
        body="This record repeats a key, so readers must reject it.",
    ),
    "records/bad-timestamp.md": HEADER.format(
        id="bad-timestamp",
        title="Broken on purpose",
        kind="fact",
        scope="user",
        updated="yesterday",
        extra="",
        body="This record has a timestamp readers must reject.",
    ),
}
MANIFEST = (
    '{\n  "openmemories": "0.1",\n  "name": "Demo project knowledge",\n  "memories": [\n'
    + ",\n".join(f'    {{"id": "{Path(path).stem}", "path": "{path}"}}' for path in RECORDS)
    + "\n  ]\n}\n"
)


def _write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def seed(*, team: Team, user: Any) -> str:
    root = Path(settings.DATA_DIR) / "demo" / "openmemories"
    for relative, text in RECORDS.items():
        _write(root / relative, text)
    _write(root / "memories.json", MANIFEST)
    actor = Actor(user=user)
    _, identity = normalize_location(str(root.resolve()))
    source = Source.objects.filter(team=team, identity=identity).first()
    if source is None:
        try:
            source = source_add(actor=actor, team=team, location=identity)
        except ValidationError as exc:  # e.g. MEMORYADMIN_SOURCE_LOCAL_ROOTS leaves it out
            reasons = "; ".join(exc.message_dict.get("location", exc.messages))
            return f"Demo source {identity} not added: {reasons}"
    if source.state != SourceState.APPROVED:
        source_approve(actor=actor, source=source)
    run = source_refresh(source_id=source.pk, trigger="demo")
    return f"Demo source {identity}: refresh {run.status}, {run.active_count} active records."
