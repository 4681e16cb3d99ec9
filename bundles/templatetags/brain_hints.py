"""`{% similar_hints memories as similar %}`: reviewer hints for one proposal or a page of
them (bundles.embeddings.similar), and the proposals whose hints the worker is still
computing. Empty where semantic search is off."""

from __future__ import annotations

from typing import Any

from django import template

from bundles.embeddings.similar import proposal_hints, with_hint_fields
from bundles.secrets import mask_secrets
from formats.crosswalk import chunk_content

register = template.Library()


@register.simple_tag
def similar_hints(memories: Any) -> dict[str, list[Any]]:
    """{"entries": [{"memory", "text", "hints"}] for the proposals among `memories` that have
    hints, "pending": the proposals the worker has not embedded yet}."""
    if memories is None:
        return {"entries": [], "pending": []}
    items = [memories] if hasattr(memories, "memory_id") else list(memories)
    proposals = [m for m in items if getattr(m, "status", "") == "proposed"]
    proposals = with_hint_fields(proposals)
    hints = proposal_hints(proposals)
    return {
        "entries": [
            {
                "memory": memory,
                "text": mask_secrets(
                    chunk_content(memory.title, memory.body), memory.secret_findings
                ),
                "hints": hints[memory.pk],
            }
            for memory in proposals
            if hints.get(memory.pk)
        ],
        "pending": [m for m in proposals if m.pk in hints and hints[m.pk] is None],
    }
