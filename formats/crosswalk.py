"""How the three specs map onto each other (no Django): OpenMemories kinds and MemoryRail types
as MemoryAI memory types, the one text identity a memory has in the brain, and the way back from
a MemoryAI chunk to a MemoryRail file."""

from __future__ import annotations

import re
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
# The short title of a proposal drafted from an imported chunk (its first sentence or line).
PROPOSAL_TITLE = 80
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
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


def proposal_title(content: str) -> str:
    """A short title for a chunk's proposal: its first sentence or first line, whichever ends
    first, at most PROPOSAL_TITLE characters (cut at a word, with an ellipsis)."""
    first = next((line.strip() for line in content.splitlines() if line.strip()), "")
    title = _SENTENCE_END.split(first, maxsplit=1)[0].strip()
    if title.endswith(".") and not title.endswith(".."):
        title = title[:-1].rstrip()
    if len(title) <= PROPOSAL_TITLE:
        return title or "Memory"
    cut = title[: PROPOSAL_TITLE - 1]
    if " " in cut[PROPOSAL_TITLE // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"


def memory_content(*, title: str, body: str, front_matter: Any) -> str:
    """A repository memory's text in the brain. A proposal drafted from an imported chunk
    holds the whole chunk in its body (its title is a short cut of it): the body is the text
    when it hashes to the chunk the file records, so the approved memory is that same chunk."""
    extra = front_matter.get(FRONT_MATTER_KEY) if isinstance(front_matter, dict) else None
    recorded = extra.get("content_hash") if isinstance(extra, dict) else None
    if isinstance(recorded, str) and body.strip() and content_hash(body.strip()) == recorded:
        return body.strip()
    return chunk_content(title, body)


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
    differ when that is not an exact round trip (a title cut at 200 characters, spacing; a
    proposal whose body holds the whole chunk, `memory_content`). Frozen in reviews 0003."""
    text_hash = content_hash(chunk_content(title, body))
    extra = front_matter.get(FRONT_MATTER_KEY) if isinstance(front_matter, dict) else None
    recorded = extra.get("content_hash") if isinstance(extra, dict) else None
    if isinstance(recorded, str) and len(recorded) == 64 and recorded != text_hash:
        return text_hash, recorded
    return text_hash, ""
