"""Reads that span the brain's tables (dashboard, Brain page)."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, Q, QuerySet

from bundles.models import Agent, Chunk, Entity, ImportJob, L2Session, MemoryEdge, MoodState
from memoryadmin.models import AuditEvent, Team

BUNDLE_ACTIONS = ("bundle.import", "bundle.import_failed", "bundle.import_queued", "bundle.export")


def dashboard_summary(team: Team) -> dict[str, Any]:
    """Brain size by memory type, and how much of it is DNA."""
    live = Chunk.objects.filter(team=team, is_deleted=False)
    totals = live.aggregate(total=Count("id"), dna=Count("id", filter=Q(is_dna=True)))
    by_type = list(
        live.values("memory_type").annotate(count=Count("id")).order_by("-count", "memory_type")
    )
    total = totals["total"] or 0
    return {
        "total": total,
        "dna": totals["dna"] or 0,
        "dna_share": round(100 * (totals["dna"] or 0) / total) if total else 0,
        "by_type": by_type,
    }


def brain_summary(team: Team) -> dict[str, Any]:
    summary = dashboard_summary(team)
    live = Chunk.objects.filter(team=team, is_deleted=False)
    summary["by_zone"] = list(
        live.values("zone").annotate(count=Count("id")).order_by("-count", "zone")
    )
    summary["counts"] = {
        "memory_edges": MemoryEdge.objects.filter(team=team).count(),
        "entities": Entity.objects.filter(team=team).count(),
        "l2_sessions": L2Session.objects.filter(team=team).count(),
        "mood_states": MoodState.objects.filter(team=team).count(),
        "agents": Agent.objects.filter(team=team).count(),
        "deleted_chunks": Chunk.objects.filter(team=team, is_deleted=True).count(),
    }
    return summary


def recent_bundle_events(team: Team, limit: int = 10) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.filter(team=team, action__in=BUNDLE_ACTIONS).only(
        "created_at", "actor_label", "action", "summary", "data"
    )[:limit]


def recent_jobs(team: Team, limit: int = 5) -> QuerySet[ImportJob]:
    return ImportJob.objects.filter(team=team)[:limit]


def chunk_page(team: Team, page_number: str | int | None, per_page: int = 25) -> Page:
    chunks = (
        Chunk.objects.filter(team=team, is_deleted=False)
        .only(
            "id",
            "content",
            "memory_type",
            "zone",
            "is_pinned",
            "is_dna",
            "origin",
            "suspicious",
            "created_at",
        )
        .order_by("-id")
    )
    return Paginator(chunks, per_page).get_page(page_number)
