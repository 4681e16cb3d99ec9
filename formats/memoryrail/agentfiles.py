"""The managed block in AGENTS.md, CLAUDE.md and .cursor/rules/memoryrail.mdc.

A pure function of the memories (no timestamps), so regenerating it is idempotent. Text
outside the markers is never touched; a file without exactly one well-formed block is left
alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from formats.memoryrail.model import Memory

AGENT_FILES = ("AGENTS.md", "CLAUDE.md", ".cursor/rules/memoryrail.mdc")
BEGIN = "<!-- memoryrail:begin (generated; edits inside this block are overwritten) -->"
END = "<!-- memoryrail:end -->"
_BEGIN_PREFIX = "<!-- memoryrail:begin"

_TYPE_ORDER = {"constraint": 0, "decision": 1, "gotcha": 2, "attempt": 3, "thread": 4, "session": 5}

USAGE = (
    "How to use this memory:",
    "1. Before changing code, run `memoryrail precheck` with your plan and the files you will"
    " touch.",
    "2. Cite the memories you rely on as [per REF], for example [per DEC-a3f9].",
    "3. If your plan conflicts with a constraint or a decision, stop and ask a human.",
    "4. When an approach fails, record it as an `attempt` memory so nobody retries it blindly.",
)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render_block(memories: Iterable[Memory]) -> str:
    active = sorted(
        (m for m in memories if m.status == "active"),
        key=lambda m: (not m.pinned, _TYPE_ORDER.get(m.type, 9), m.id),
    )
    lines = [BEGIN, "## Project memory (MemoryRail)", ""]
    if active:
        lines.append("Active memories:")
        lines.append("")
        for memory in active:
            pin = " (pinned)" if memory.pinned else ""
            lines.append(f"- [{memory.ref}] {memory.type}{pin}: {_one_line(memory.title)}")
    else:
        lines.append("No active memories yet.")
    lines.append("")
    lines.extend(USAGE)
    lines.append(END)
    return "\n".join(lines) + "\n"


def has_block(text: str) -> bool:
    return _span(text) is not None


def _span(text: str) -> tuple[int, int] | None:
    if text.count(_BEGIN_PREFIX) != 1 or text.count(END) != 1:
        return None
    start = text.index(_BEGIN_PREFIX)
    end = text.index(END)
    if end < start:
        return None
    stop = end + len(END)
    if text[stop : stop + 2] == "\r\n":
        stop += 2
    elif text[stop : stop + 1] == "\n":
        stop += 1
    return start, stop


def replace_block(text: str, block: str) -> str:
    """`text` with its managed block replaced by `block`; unchanged if it has no single block."""
    span = _span(text)
    if span is None:
        return text
    start, stop = span
    return text[:start] + block + text[stop:]
