"""How the three specs map onto each other (no Django): OpenMemories kinds and MemoryRail types
as MemoryAI memory types, the one text identity a memory has in the brain, and the way back from
a MemoryAI chunk to a MemoryRail file."""

from __future__ import annotations

from typing import Any

from formats.memoryai import content_hash

# OpenMemories kind -> (memory_type, extra tags)
SOURCE_TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "preference": ("preference", ()),
    "procedure": ("procedure", ()),
    "fact": ("fact", ()),
    "project": ("fact", ("project",)),
}
# MemoryRail type -> (memory_type, zone, extra tags)
MEMORY_TYPES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "decision": ("decision", "standard", ()),
    "constraint": ("x_constraint", "critical", ()),
    "gotcha": ("pitfall", "standard", ()),
    "attempt": ("pitfall", "standard", ("attempt",)),
    "thread": ("goal", "standard", ()),
    "session": ("episodic", "standard", ()),
}
# MemoryAI memory_type -> MemoryRail type (MEMORY_TYPES read backwards).
REVERSE_TYPES = {
    "decision": "decision",
    "x_constraint": "constraint",
    "pitfall": "gotcha",
    "goal": "thread",
    "episodic": "session",
}
# A proposal's title, cut from a chunk's first line.
MAX_TITLE = 200
# Front matter field our import writer adds to a proposal it renders from a chunk.
FRONT_MATTER_KEY = "x-memoryadmin"


def chunk_content(title: str, body: str) -> str:
    """Title, a blank line, the body (both trimmed); the title alone when there is no body."""
    title, body = title.strip(), body.strip()
    return f"{title}\n\n{body}" if body else title


def split_content(content: str) -> tuple[str, str]:
    """First non-empty line is the title (at most MAX_TITLE characters), the rest the body."""
    text = content.strip()
    first, _, rest = text.partition("\n")
    first = first.strip()
    if len(first) > MAX_TITLE:
        return first[: MAX_TITLE - 1].rstrip() + "…", text
    return first, rest.strip()


def memoryrail_type(memory_type: str, tags: list[str]) -> tuple[str, list[str]]:
    """The MemoryRail type for a DNA chunk, and its tags.

    `pitfall` tagged `attempt` is an attempt. preference/procedure/identity (and any chunk
    that is DNA by zone or pin) are rules to follow: `constraint`, tagged with the original
    type so nothing is lost.
    """
    if memory_type == "pitfall" and "attempt" in tags:
        return "attempt", [t for t in tags if t != "attempt"]
    if memory_type in REVERSE_TYPES:
        return REVERSE_TYPES[memory_type], list(tags)
    return "constraint", [*tags, memory_type] if memory_type not in tags else list(tags)


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
