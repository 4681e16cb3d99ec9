"""Build OpenMemories sources on disk for tests."""

from __future__ import annotations

import json
from pathlib import Path


def record_text(
    record_id: str,
    *,
    title: str = "A record",
    kind: str = "fact",
    scope: str = "user",
    created: str = "2026-01-01T00:00:00Z",
    updated: str = "2026-01-02T00:00:00Z",
    extra: str = "",
    body: str = "Some body text.\n",
) -> str:
    return (
        f"---\nopenmemories: '0.1'\nid: '{record_id}'\ntitle: '{title}'\nkind: '{kind}'\n"
        f"scope: '{scope}'\ncreated: '{created}'\nupdated: '{updated}'\n{extra}---\n\n{body}"
    )


def manifest_text(ids: list[str], name: str = "Test source") -> str:
    memories = [{"id": i, "path": f"records/{i}.md"} for i in ids]
    return json.dumps({"openmemories": "0.1", "name": name, "memories": memories})


def write_source(root: Path, records: dict[str, str], *, name: str = "Test source") -> Path:
    """records: id -> file text, written to records/<id>.md and listed in memories.json."""
    (root / "records").mkdir(parents=True, exist_ok=True)
    for record_id, text in records.items():
        (root / "records" / f"{record_id}.md").write_text(text, encoding="utf-8")
    (root / "memories.json").write_text(manifest_text(list(records), name), encoding="utf-8")
    return root
