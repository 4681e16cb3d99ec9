"""How pages say numbers and times: words, not Python values.

`{% load memoryadmin_format %}` then:
- `{{ n|counted:"commit" }}` → "1 commit", "2 commits"; `{{ n|counted:"entry,entries" }}`.
- `{{ dt|ago }}` → "just now", "1 minute ago", "3 hours ago", "in 5 minutes".
- `{{ delta|every }}` → "every 15 minutes", "every hour", "every 2 days" (a timedelta or seconds).
- `{{ dt|when }}` → "2026-03-01 14:05 UTC": the date in the current time zone, with its name.
- `{{ mapping|tally }}` → "3 inserted, 1 updated" for a dict of counts (never its repr).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django import template
from django.utils import timezone

register = template.Library()

UNITS = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


@register.filter
def counted(number: Any, noun: str) -> str:
    singular, _, plural = noun.partition(",")
    try:
        n = int(number)
    except (TypeError, ValueError):
        return ""
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


def _amount(seconds: int) -> tuple[int, str]:
    """The largest unit that divides nicely enough: (count, unit)."""
    for unit, size in UNITS:
        if seconds >= size:
            return seconds // size, unit
    return seconds, "second"


@register.filter
def ago(value: datetime | None, now: datetime | None = None) -> str:
    if not isinstance(value, datetime):
        return ""
    seconds = int(((now or timezone.now()) - value).total_seconds())
    if abs(seconds) < 60:
        return "just now"
    count, unit = _amount(abs(seconds))
    words = counted(count, unit)
    return f"{words} ago" if seconds > 0 else f"in {words}"


@register.filter
def every(value: timedelta | int | float | None) -> str:
    if value is None or value == "":
        return ""
    seconds = int(value.total_seconds() if isinstance(value, timedelta) else value)
    for unit, size in UNITS:
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"every {unit}" if count == 1 else f"every {counted(count, unit)}"
    return f"every {counted(seconds, 'second')}"


@register.filter
def when(value: datetime | None, seconds: bool = False) -> str:
    if not isinstance(value, datetime):
        return ""
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    stamp = local.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
    zone = local.tzname() if timezone.is_aware(value) else ""
    return f"{stamp} {zone}".strip()


@register.filter
def tally(value: Any) -> str:
    if isinstance(value, dict):
        parts = [f"{count} {name.replace('_', ' ')}" for name, count in value.items()]
        return ", ".join(parts) if parts else "nothing"
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value)
    return "" if value is None else str(value)
