"""What people read of the usage counters: the Usage page and `GET /api/usage/`, and the
"served N times, last on D by token T" lines of the record, memory and Brain pages."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Max, Q, Sum
from django.utils import timezone

from bundles.models import Chunk, ChunkOrigin
from bundles.secrets import mask_secrets
from bundles.usage.counting import OPERATIONS
from bundles.usage.models import UsageCounter, UsageKind
from formats.crosswalk import split_content
from memoryadmin.models import Team

DEFAULT_DAYS = 30
MAX_DAYS = 365
MOST_SERVED = 20
NOT_SERVED = 50


@dataclass(frozen=True)
class Served:
    """One served thing's counter, as a page shows it."""

    ref: str
    count: int
    last_at: datetime | None
    last_label: str
    by_token: bool
    title: str = ""
    origin: str = ""
    metadata: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "title": self.title,
            "origin": self.origin,
            "count": self.count,
            "last_served_at": self.last_at,
            "last_served_by": self.last_label or None,
            "last_served_by_kind": ("token" if self.by_token else "user") if self.count else None,
        }


def _title(chunk: Chunk) -> str:
    return split_content(mask_secrets(chunk.content, chunk.secret_findings))[0][:200]


def _brain_ref(ref: str) -> bool:
    return ref.startswith("brain:") and ref[6:].isascii() and ref[6:].isdigit()


def _described(team: Team, counters: list[UsageCounter]) -> list[Served]:
    """Counters with the title and origin of what they count (two queries at most)."""
    refs = [c.key for c in counters]
    origins = {
        o.ref: o
        for o in ChunkOrigin.objects.filter(team=team, ref__in=refs).select_related("chunk")
    }
    brain_ids = [int(r[6:]) for r in refs if _brain_ref(r)]
    chunks = {}
    if brain_ids:
        chunks = {c.pk: c for c in Chunk.objects.filter(team=team, pk__in=brain_ids)}
    found = []
    for counter in counters:
        origin = origins.get(counter.key)
        chunk = origin.chunk if origin else None
        if chunk is None and _brain_ref(counter.key):
            chunk = chunks.get(int(counter.key[6:]))
        found.append(
            Served(
                ref=counter.key,
                count=counter.count,
                last_at=counter.last_at,
                last_label=counter.last_label,
                by_token=counter.last_token_id is not None,
                title=_title(chunk) if chunk is not None else "",
                origin=origin.kind if origin else ("brain" if chunk else ""),
                metadata=origin.metadata if origin else None,
            )
        )
    return found


def most_served(team: Team, limit: int = MOST_SERVED) -> list[Served]:
    counters = list(
        UsageCounter.objects.filter(team=team, kind=UsageKind.SERVED).order_by("-count", "key")[
            :limit
        ]
    )
    return _described(team, counters)


def not_served(
    team: Team, *, days: int = DEFAULT_DAYS, limit: int = NOT_SERVED, now: datetime | None = None
) -> tuple[int, list[Served]]:
    """Served records and memories (active origins) no agent read in the last `days` days:
    candidates to archive. Returns (how many, the first `limit` by ref)."""
    now = now or timezone.now()
    recent = UsageCounter.objects.filter(
        team=team, kind=UsageKind.SERVED, last_at__gte=now - timedelta(days=days)
    ).values("key")
    origins = (
        ChunkOrigin.objects.filter(team=team, active=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .exclude(ref__in=recent)
    )
    total = origins.count()
    page = list(origins.select_related("chunk").order_by("ref")[:limit])
    last = {c.key: c for c in UsageCounter.objects.filter(team=team, key__in=[o.ref for o in page])}
    return total, [
        Served(
            ref=o.ref,
            count=last[o.ref].count if o.ref in last else 0,
            last_at=last[o.ref].last_at if o.ref in last else None,
            last_label=last[o.ref].last_label if o.ref in last else "",
            by_token=o.ref in last and last[o.ref].last_token_id is not None,
            title=_title(o.chunk),
            origin=o.kind,
            metadata=o.metadata,
        )
        for o in page
    ]


def token_activity(
    team: Team, *, days: int = DEFAULT_DAYS, now: datetime | None = None
) -> list[dict[str, Any]]:
    """Per reader (token or signed-in user): reads per operation over the last `days` days,
    the total and the last read, busiest first."""
    now = now or timezone.now()
    since = (now - timedelta(days=days - 1)).date()
    rows = (
        UsageCounter.objects.filter(team=team, kind=UsageKind.ACTIVITY, day__gte=since)
        .values("last_token_id", "last_label", "operation")
        .annotate(total=Sum("count"), last=Max("last_at"))
        .order_by()
    )
    readers: dict[tuple[int | None, str], dict[str, Any]] = {}
    for row in rows:
        key = (row["last_token_id"], row["last_label"])
        reader = readers.setdefault(
            key,
            {
                "token_id": row["last_token_id"],
                "name": row["last_label"],
                "kind": "token" if row["last_token_id"] is not None else "user",
                "operations": dict.fromkeys(OPERATIONS, 0),
                "total": 0,
                "last_read_at": None,
            },
        )
        reader["operations"][row["operation"]] = row["total"]
        reader["total"] += row["total"]
        if reader["last_read_at"] is None or row["last"] > reader["last_read_at"]:
            reader["last_read_at"] = row["last"]
    return sorted(readers.values(), key=lambda r: (-r["total"], r["name"]))


def usage_of_refs(team: Team, refs: Iterable[str]) -> list[Served]:
    """The counters of these refs, in the order given; a ref never served counts 0."""
    refs = list(dict.fromkeys(refs))
    rows = UsageCounter.objects.filter(team=team, kind=UsageKind.SERVED, key__in=refs)
    counters = {c.key: c for c in rows}
    return [
        Served(
            ref=ref,
            count=counters[ref].count if ref in counters else 0,
            last_at=counters[ref].last_at if ref in counters else None,
            last_label=counters[ref].last_label if ref in counters else "",
            by_token=ref in counters and counters[ref].last_token_id is not None,
        )
        for ref in refs
    ]


def usage_with_prefix(
    team: Team, prefix: str, limit: int = MOST_SERVED
) -> tuple[int, list[Served]]:
    """The most served refs starting with `prefix` (`source:<id>:`, `repository:<id>:`): how
    many were ever served, and the first `limit`."""
    counters = UsageCounter.objects.filter(team=team, kind=UsageKind.SERVED, key__startswith=prefix)
    found = list(counters.order_by("-count", "key")[:limit])
    total = len(found) if len(found) < limit else counters.count()
    return total, _described(team, found)


def clean_days(value: str | None) -> int | None:
    """`?days=` as a whole number of days (1 to 365); the default when empty; None when bad."""
    if value in (None, ""):
        return DEFAULT_DAYS
    if not (value.isascii() and value.isdigit() and len(value) <= 3):
        return None
    if not 1 <= int(value) <= MAX_DAYS:
        return None
    return int(value)


def usage_summary(team: Team, *, days: int = DEFAULT_DAYS) -> dict[str, Any]:
    """The Usage page and `GET /api/usage/` in one shape."""
    total, candidates = not_served(team, days=days)
    return {
        "days": days,
        "most_served": most_served(team),
        "not_served": {"count": total, "items": candidates},
        "activity": token_activity(team, days=days),
    }
