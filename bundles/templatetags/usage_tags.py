"""`{% usage_for current_team thing as usage %}`: the usage block of a record, memory or Brain
page (templates/bundles/_usage.html), one query whatever the page shows."""

from __future__ import annotations

from typing import Any

from django import template

from bundles.usage.selectors import usage_of_refs, usage_with_prefix
from memoryadmin.models import Team
from reviews.models import Memory, Repository
from sources.models import Source

register = template.Library()


def _chunk_refs(chunks: Any) -> list[str]:
    """Every ref a page of chunks is served under: its origins' refs (prefetched) and its own."""
    refs = []
    for chunk in chunks:
        refs.extend(origin.ref for origin in chunk.origins.all())
        refs.append(f"brain:{chunk.pk}")
    return refs


@register.simple_tag
def usage_for(team: Team, thing: Any) -> dict[str, Any]:
    """{"rows": [Served…], "total": n, "single": bool} for a Source or Repository (its most
    served), a Memory (itself and what it replaces) or a page of chunks."""
    if isinstance(thing, Source | Repository):
        kind = "source" if isinstance(thing, Source) else "repository"
        total, rows = usage_with_prefix(team, f"{kind}:{thing.pk}:")
        return {"rows": rows, "total": total, "single": False}
    if isinstance(thing, Memory):
        refs = [f"repository:{thing.repository_id}:{thing.memory_id}"]
        if thing.supersedes:
            refs.append(f"repository:{thing.repository_id}:{thing.supersedes}")
        rows = usage_of_refs(team, refs)
        return {"rows": rows, "total": len(rows), "single": True, "memory": thing}
    rows = [row for row in usage_of_refs(team, _chunk_refs(thing or [])) if row.count]
    return {"rows": rows, "total": len(rows), "single": False}
