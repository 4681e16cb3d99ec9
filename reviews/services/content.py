"""The text of a memory file as the brain hashes it: one identity for decisions and imports."""

from __future__ import annotations

from typing import Any

from bundles.mirror import chunk_content
from formats.memoryai.protocol import content_hash

# Front matter field our import writer adds to a proposal it renders from a chunk.
FRONT_MATTER_KEY = "x-memoryadmin"


def memory_hashes(*, title: str, body: str, front_matter: Any) -> tuple[str, str]:
    """(hash of title + body as the mirror would hold it, the imported chunk's own hash when
    the file records a different one, else "").

    An imported chunk's text is split into title and body when it becomes a file; the two
    differ when that is not an exact round trip (a title cut at 200 characters, spacing)."""
    text_hash = content_hash(chunk_content(title, body))
    extra = front_matter.get(FRONT_MATTER_KEY) if isinstance(front_matter, dict) else None
    recorded = extra.get("content_hash") if isinstance(extra, dict) else None
    if isinstance(recorded, str) and len(recorded) == 64 and recorded != text_hash:
        return text_hash, recorded
    return text_hash, ""
