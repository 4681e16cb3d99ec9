"""What the team home page shows; each app contributes a small summary."""

from __future__ import annotations

from typing import Any

from memoryadmin.models import AuditEvent, Team

CHART_WIDTH = 360
CHART_HEIGHT = 120
CHART_TOP = 14  # room for the value label above the tallest bar
CHART_BOTTOM = 18  # room for the week labels


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
    weeks = (context.get("reviews") or {}).get("weeks")
    if weeks:
        context["decision_chart"] = weekly_bar_chart(weeks)
    return context


def weekly_bar_chart(weeks: list[dict[str, Any]]) -> dict[str, Any]:
    """Geometry of a stacked bar chart (approved below, rejected above) for inline SVG.

    Computed here so the template only places rectangles: no JavaScript, no build step.
    """
    peak = max((week["total"] for week in weeks), default=0) or 1
    plot = CHART_HEIGHT - CHART_TOP - CHART_BOTTOM
    slot = CHART_WIDTH / max(len(weeks), 1)
    bar = round(slot * 0.7, 1)
    baseline = CHART_HEIGHT - CHART_BOTTOM
    bars = []
    for index, week in enumerate(weeks):
        approved_h = round(plot * week["approved"] / peak, 1)
        rejected_h = round(plot * week["rejected"] / peak, 1)
        x = round(index * slot + (slot - bar) / 2, 1)
        bars.append(
            {
                **week,
                "x": x,
                "center": round(x + bar / 2, 1),
                "approved_y": round(baseline - approved_h, 1),
                "approved_h": approved_h,
                "rejected_y": round(baseline - approved_h - rejected_h, 1),
                "rejected_h": rejected_h,
                "label_y": round(baseline - approved_h - rejected_h - 3, 1),
            }
        )
    return {
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "bar_width": bar,
        "baseline": baseline,
        "label_y": CHART_HEIGHT - 5,
        "bars": bars,
        "total": sum(week["total"] for week in weeks),
        "peak": max((week["total"] for week in weeks), default=0),
    }
