"""What the team home page shows; each app contributes a small summary."""

from __future__ import annotations

from typing import Any

from memoryadmin.models import AuditEvent, Team


def team_dashboard(team: Team) -> dict[str, Any]:
    context: dict[str, Any] = {
        "recent_events": AuditEvent.objects.filter(team=team).only(
            "created_at", "actor_label", "action", "summary"
        )[:10]
    }
    for module_name in ("sources.selectors", "reviews.selectors", "bundles.selectors"):
        try:
            module = __import__(module_name, fromlist=["dashboard_summary"])
        except ImportError:
            continue
        summary = getattr(module, "dashboard_summary", None)
        if summary is not None:
            context[module_name.split(".")[0]] = summary(team)
    return context
