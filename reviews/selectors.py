"""Reads that span relations: the review queue, history and the dashboard card."""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, Min, OuterRef, Prefetch, QuerySet, Subquery
from django.utils import timezone

from memoryadmin.models import Team
from reviews import memoryrail
from reviews.models import (
    TWO_APPROVAL_TYPES,
    Approval,
    Decision,
    DecisionItem,
    Memory,
    MemoryStatus,
    PushState,
    Repository,
    ReviewSettings,
)

QUEUE_FIELDS = (
    "id",
    "ref",
    "type",
    "title",
    "status",
    "author_name",
    "added_at",
    "has_secret",
    "is_stale",
    "supersedes",
    "repository__id",
    "repository__name",
)


def open_proposals(team: Team) -> QuerySet[Memory]:
    """Proposals waiting for a human: status proposed, no decision on its way."""
    pending = DecisionItem.objects.filter(memory=OuterRef("pk"), decision__state=PushState.PENDING)
    return (
        Memory.objects.filter(team=team, status=MemoryStatus.PROPOSED)
        .exclude(Exists(pending))
        .select_related("repository")
    )


def with_review_state(queryset: QuerySet[Memory]) -> QuerySet[Memory]:
    """Add `first_approved_by` (a first approval on the current blob) and the assignees."""
    first = Approval.objects.filter(memory=OuterRef("pk"), blob_sha=OuterRef("blob_sha"))
    user_model = Memory.assigned_reviewers.field.related_model
    return queryset.annotate(
        first_approved_by=Subquery(first.order_by("id").values("actor_label")[:1])
    ).prefetch_related(
        Prefetch(
            "assigned_reviewers",
            queryset=user_model.objects.only("id", "username").order_by("username"),
        )
    )


def requires_two_approvals(team: Team) -> bool:
    return ReviewSettings.objects.filter(team=team, require_two_approvals=True).exists()


def approvals_needed(memory_type: str, *, two_approvals: bool) -> int:
    return 2 if two_approvals and memory_type in TWO_APPROVAL_TYPES else 1


def review_queue(
    team: Team, *, filters: dict[str, str], user: Any | None = None
) -> QuerySet[Memory]:
    queryset = with_review_state(open_proposals(team).only(*QUEUE_FIELDS))
    if filters.get("assigned") == "me":
        if user is None or not getattr(user, "is_authenticated", False):
            return queryset.none()
        queryset = queryset.filter(assigned_reviewers=user)
    if filters.get("repository"):
        queryset = queryset.filter(repository_id=filters["repository"])
    if filters.get("type") in memoryrail.TYPE_PREFIXES:
        queryset = queryset.filter(type=filters["type"])
    flag = filters.get("flag")
    if flag == "secret":
        queryset = queryset.filter(has_secret=True)
    elif flag == "stale":
        queryset = queryset.filter(is_stale=True)
    elif flag == "clean":
        queryset = queryset.filter(has_secret=False, is_stale=False)
    return queryset.order_by("added_at", "id")


def find_memories(team: Team, key: str, *, repository: Repository | None = None) -> list[Memory]:
    """Memories of the team matching an id, a short ref or a primary key (all matches)."""
    queryset = Memory.objects.filter(team=team).select_related("repository")
    if repository is not None:
        queryset = queryset.filter(repository=repository)
    if key.isdigit():
        return list(queryset.filter(pk=int(key)))
    if memoryrail.is_ref(key):
        return list(queryset.filter(ref=key)) or list(queryset.filter(memory_id=key))
    return list(queryset.filter(memory_id=key))


def decision_history(team: Team) -> QuerySet[Decision]:
    return (
        Decision.objects.filter(team=team)
        .select_related("repository", "reviewer", "token")
        .prefetch_related("items")
    )


def dashboard_summary(team: Team) -> dict[str, Any]:
    queue = open_proposals(team)
    oldest = queue.aggregate(oldest=Min("added_at"))["oldest"]
    return {
        "queue_size": queue.count(),
        "oldest_age": timezone.now() - oldest if oldest else None,
        "oldest_at": oldest,
        "push_failures": Decision.objects.filter(
            team=team, state__in=[PushState.FAILED, PushState.CONFLICT]
        ).count(),
        "pending_pushes": Decision.objects.filter(team=team, state=PushState.PENDING).count(),
        "repository_errors": Repository.objects.filter(team=team, last_sync_ok=False).count(),
    }
