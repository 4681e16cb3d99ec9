"""How pages say numbers and times: words, not Python values.

`{% load memoryadmin_format %}` then:
- `{{ n|counted:"commit" }}` → "1 commit", "2 commits"; `{{ n|counted:"entry,entries" }}`.
- `{{ dt|ago }}` → "just now", "1 minute ago", "3 hours ago", "in 5 minutes".
- `{{ delta|every }}` → "every 15 minutes", "every hour", "every 2 days" (a timedelta or seconds).
- `{{ dt|when }}` → "2026-03-01 14:05 UTC": the date in the current time zone, with its name;
  `when:"seconds"` adds the seconds, `when:"date"` is the day alone.
- `{{ dt|moment }}` → the same in a `<time>` element, plus "(just now)", "(3 hours ago)" or
  "(in 5 minutes)" within a day of now; `moment:"ago"` reads "3 hours ago" with the full time
  as its title (where the age is the point: queue, last success). Every time a page shows
  goes through one of the two (tests/memoryadmin/test_template_sweeps.py keeps it so).
- `{{ mapping|tally }}` → "3 inserted, 1 updated" for a dict of counts (never its repr).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html

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


FORMATS = {"": "%Y-%m-%d %H:%M", "seconds": "%Y-%m-%d %H:%M:%S", "date": "%Y-%m-%d"}


def _form(form: Any) -> str:
    """`when`'s argument: "seconds", "date", or nothing (minutes); True means "seconds"."""
    if form is True:
        return "seconds"
    return form if form in FORMATS else ""


@register.filter
def when(value: datetime | None, form: Any = "") -> str:
    if not isinstance(value, datetime):
        return ""
    form = _form(form)
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    stamp = local.strftime(FORMATS[form])
    if form == "date":
        return stamp
    zone = local.tzname() if timezone.is_aware(value) else ""
    return f"{stamp} {zone}".strip()


@register.filter
def moment(value: datetime | None, form: Any = "") -> str:
    """A `<time>` element reading `when` (with its zone) and, within a day of now, how long
    ago or ahead in words ("just now", "in 5 minutes"); the "date" and "ago" forms carry the
    full time as their title. Empty for no time, so `|default:"never"` works."""
    if not isinstance(value, datetime):
        return ""
    if form == "ago":
        return format_html(
            '<time datetime="{}" title="{}">{}</time>', value.isoformat(), when(value), ago(value)
        )
    form = _form(form)
    text = when(value, form)
    if form == "date":
        return format_html(
            '<time datetime="{}" title="{}">{}</time>', value.isoformat(), when(value), text
        )
    near = (
        abs((timezone.now() - value).total_seconds()) < 86400 if timezone.is_aware(value) else False
    )
    if not near:
        return format_html('<time datetime="{}">{}</time>', value.isoformat(), text)
    return format_html(
        '<time datetime="{}">{}</time> <small class="ago">({})</small>',
        value.isoformat(),
        text,
        ago(value),
    )


@register.filter
def tally(value: Any) -> str:
    if isinstance(value, dict):
        parts = [f"{count} {name.replace('_', ' ')}" for name, count in value.items()]
        return ", ".join(parts) if parts else "nothing"
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value)
    return "" if value is None else str(value)
