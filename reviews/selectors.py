"""Reads that span relations: the review queue, history and the dashboard card."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.utils import timezone

from formats import memoryrail
from formats.memoryai import MAX_TAGS
from memoryadmin.batching import for_batches
from memoryadmin.models import Team
from reviews.filters import QUEUE_FILTERS, QueueFilterSet
from reviews.models import (
    TWO_APPROVAL_TYPES,
    Approval,
    Decision,
    DecisionItem,
    DecisionKind,
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
    team: Team, *, filters: Mapping[str, str], user: Any | None = None
) -> QuerySet[Memory]:
    """The team's open proposals, oldest first. `filters` (as `queue_filters` reads them) are
    the queue page's and the API's own (`QueueFilterSet`), read forgivingly: a bad value
    narrows nothing, as the proposal pages have always read them."""
    queryset = with_review_state(open_proposals(team).only(*QUEUE_FIELDS)).order_by(
        "added_at", "id"
    )
    if not any(filters.values()):
        return queryset
    return QueueFilterSet(filters, queryset=queryset, team=team, user=user).forgiving()


def queue_filters(params: Any) -> dict[str, str]:
    """The queue's filters from a query (or a form post): the proposal pages keep them."""
    filters = {k: str(params.get(k, "")) for k in QUEUE_FILTERS}
    if not filters["repository"].isdigit():
        filters["repository"] = ""
    return filters


def queue_neighbours(
    team: Team, memory_pk: int, *, filters: dict[str, str], user: Any | None = None
) -> tuple[int | None, int | None]:
    """(previous, next) proposal of the same queue around this one, by primary key. One
    query over the ids only; a proposal not in the queue (decided) has the queue's first."""
    ids = list(review_queue(team, filters=filters, user=user).values_list("pk", flat=True))
    if memory_pk not in ids:
        return None, (ids[0] if ids else None)
    at = ids.index(memory_pk)
    return (ids[at - 1] if at else None), (ids[at + 1] if at + 1 < len(ids) else None)


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


FAILURE_STATES = (PushState.FAILED, PushState.CONFLICT)


def failure_open() -> Exists:
    """For a decision row: one of its proposals is still waiting for review and no decision
    came after this one on it. A failed or conflicting push stops being the last word when the
    proposal is decided again (re-approved, rejected: its push is a later decision) or leaves
    the queue (approved or removed upstream); a retried decision is `pending` again anyway."""
    later = DecisionItem.objects.filter(
        memory_id=OuterRef("memory_id"), decision_id__gt=OuterRef("decision_id")
    )
    return Exists(
        DecisionItem.objects.filter(
            decision_id=OuterRef("pk"), memory__status=MemoryStatus.PROPOSED
        ).exclude(Exists(later))
    )


def open_push_failures(team: Team) -> QuerySet[Decision]:
    """Failed or conflicting decisions that still need someone (see failure_open)."""
    return Decision.objects.filter(team=team, state__in=FAILURE_STATES).filter(failure_open())


def decision_history(team: Team) -> QuerySet[Decision]:
    """Decisions, newest first; `failure_open` tells a failure still to act on from one that a
    later decision resolved (only meaningful for failed and conflicting ones)."""
    return (
        Decision.objects.filter(team=team)
        .annotate(failure_open=failure_open())
        .select_related("repository", "reviewer", "token")
        .prefetch_related("items")
    )


DASHBOARD_WEEKS = 12
MEDIAN_DAYS = 30


def _week_start(moment: datetime) -> date:
    local = timezone.localtime(moment).date()
    return local - timedelta(days=local.weekday())


def short_duration(value: timedelta) -> str:
    """'45 min', '5 h 20 min', '3 d 4 h': enough precision for a glance."""
    minutes = max(0, int(value.total_seconds() // 60))
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min"


def dashboard_summary(team: Team) -> dict[str, Any]:
    """Queue size and age, pushes failing or pending, time to decision, decisions per week."""
    now = timezone.now()
    queue = open_proposals(team)
    queue_size = queue.count()
    oldest = (
        queue.order_by("added_at", "id").values("pk", "ref", "title", "added_at").first()
        if queue_size
        else None
    )
    # Only failures still to act on: a later decision or the proposal leaving the queue
    # resolves one (the history page shows it as resolved).
    states = Decision.objects.filter(team=team).aggregate(
        failures=Count("id", filter=Q(state__in=FAILURE_STATES) & failure_open()),
        pending=Count("id", filter=Q(state=PushState.PENDING)),
    )
    failed = list(
        open_push_failures(team)
        .select_related("repository")
        .prefetch_related(
            Prefetch(
                "items",
                queryset=DecisionItem.objects.only(
                    "id", "decision_id", "memory_id", "ref", "title"
                ),
            )
        )
        .only("id", "kind", "state", "state_detail", "created_at", "repository__name")
        .order_by("-created_at", "-id")[:5]
    )
    this_week = _week_start(now)
    first_week = this_week - timedelta(weeks=DASHBOARD_WEEKS - 1)
    since = min(
        now - timedelta(days=MEDIAN_DAYS),
        timezone.make_aware(datetime.combine(first_week, time.min)),
    )
    weeks = {
        first_week + timedelta(weeks=n): {"approve": 0, "reject": 0} for n in range(DASHBOARD_WEEKS)
    }
    waits: list[timedelta] = []
    rows = DecisionItem.objects.filter(
        decision__team=team, decision__created_at__gte=since
    ).values_list("decision__created_at", "decision__kind", "proposed_at")
    for decided_at, kind, proposed_at in rows.iterator(chunk_size=2000):
        week = weeks.get(_week_start(decided_at))
        if week is not None:
            week[kind] += 1
        if proposed_at is not None and decided_at >= now - timedelta(days=MEDIAN_DAYS):
            waits.append(decided_at - proposed_at)
    median = statistics.median(waits) if waits else None
    return {
        "queue_size": queue_size,
        "oldest": oldest,
        "oldest_at": oldest["added_at"] if oldest else None,
        "oldest_age": now - oldest["added_at"] if oldest and oldest["added_at"] else None,
        "median_decision_time": median,
        "median_decision_label": short_duration(median) if median is not None else "",
        "decided_30d": len(waits),
        "push_failures": states["failures"],
        "failed_decisions": failed,
        "pending_pushes": states["pending"],
        "repository_errors": Repository.objects.filter(team=team, last_sync_ok=False).count(),
        "weeks": [
            {
                "start": start,
                "approved": counts["approve"],
                "rejected": counts["reject"],
                "total": counts["approve"] + counts["reject"],
            }
            for start, counts in weeks.items()
        ],
    }


# ----------------------------------------------------------------------------- provenance


def repository_approvals(
    repository: Repository, keys: Iterable[str] | None = None
) -> dict[str, tuple[str, str]]:
    """memory id -> (approver, commit) of its latest pushed approval in this repository; of
    these memory ids only, or (None) of every memory: one statement, for an index that mirrors
    all of them (a statement per 500 memories was most of the mirror's reads)."""
    approvals: dict[str, tuple[str, str]] = {}
    pushed = DecisionItem.objects.filter(
        decision__repository=repository,
        decision__kind=DecisionKind.APPROVE,
        decision__state=PushState.PUSHED,
    ).order_by("decision_id")
    fields = ("memory_key", "decision__actor_label", "decision__commit_sha")
    if keys is None:
        batches: Iterable[Any] = [pushed.values_list(*fields)]
    else:
        batches = (
            pushed.filter(memory_key__in=batch).values_list(*fields)
            for batch in for_batches(list(keys))
        )
    for rows in batches:
        for key, label, sha in rows:
            approvals[key] = (label, sha)
    return approvals


def memory_provenance(
    repository: Repository,
    memories: Iterable[Memory],
    approvals: dict[str, tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """memory id -> {commit, approved_by, approval}: the latest pushed approval, else the
    commit that added the file (a memory committed as active needs no review). `approvals`:
    `repository_approvals` of the whole repository, when the caller read it already."""
    memories = list(memories)
    if approvals is None:
        approvals = repository_approvals(repository, (m.memory_id for m in memories))
    result = {}
    for memory in memories:
        if memory.memory_id in approvals:
            label, sha = approvals[memory.memory_id]
            result[memory.memory_id] = {"commit": sha, "approved_by": label, "approval": "review"}
        else:
            result[memory.memory_id] = {
                "commit": memory.added_commit,
                "approved_by": memory.author_name,
                "approval": "commit",
            }
    return result


def memory_pinned(memory: Memory) -> bool:
    pinned = memory.front_matter.get("pinned", False)
    return pinned is True or (isinstance(pinned, str) and pinned.lower() == "true")


def memory_tags(memory: Memory) -> list[str]:
    tags = memory.front_matter.get("tags") or []
    if not isinstance(tags, list):
        tags = [tags]
    return [str(t) for t in tags if isinstance(t, str | int | float)][: MAX_TAGS - 1]


def repositories_due(now: datetime) -> list[int]:
    """Primary keys of the repositories whose sync interval has passed (or never synced)."""
    rows = Repository.objects.filter(enabled=True).values_list(
        "pk", "last_sync_at", "sync_interval_minutes"
    )
    return [
        pk
        for pk, last_sync_at, minutes in rows.iterator()
        if last_sync_at is None or last_sync_at <= now - timedelta(minutes=minutes)
    ]
