"""`{% similar_hints memories as entries %}`: reviewer hints for one proposal or a page of
them (bundles.embeddings.similar). Empty where semantic search is off."""

from __future__ import annotations

from typing import Any

from django import template

from bundles.embeddings.similar import proposal_hints
from bundles.secrets import mask_secrets
from formats.crosswalk import chunk_content

register = template.Library()


@register.simple_tag
def similar_hints(memories: Any) -> list[dict[str, Any]]:
    """[{"memory", "text", "hints"}] for the proposals among `memories` that have hints."""
    if memories is None:
        return []
    items = [memories] if hasattr(memories, "memory_id") else list(memories)
    proposals = [m for m in items if getattr(m, "status", "") == "proposed"]
    hints = proposal_hints(proposals)
    return [
        {
            "memory": memory,
            "text": mask_secrets(chunk_content(memory.title, memory.body), memory.secret_findings),
            "hints": hints[memory.pk],
        }
        for memory in proposals
        if hints.get(memory.pk)
    ]
