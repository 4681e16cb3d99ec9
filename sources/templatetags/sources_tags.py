"""Record bodies are untrusted: the project's one Markdown renderer (no raw HTML, no images)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from memoryadmin.markdown import render_untrusted_markdown

register = template.Library()


@register.filter
def untrusted_markdown(text: str) -> SafeString:
    # nh3 removes anything that is not plain formatting; its output is safe to embed.
    return mark_safe(render_untrusted_markdown(text))  # noqa: S308


HEALTH_BADGES = {"fresh": "ok", "stale": "warn", "denied": "bad", "failed": "bad", "never": ""}
STATUS_BADGES = {"succeeded": "ok", "failed": "warn", "denied": "bad", "skipped": ""}


@register.filter
def health_badge(value: str) -> str:
    return HEALTH_BADGES.get(value, "")


@register.filter
def status_badge(value: str) -> str:
    return STATUS_BADGES.get(value, "")


@register.simple_tag
def run_outcome(run: Any, first_success: datetime | None) -> SafeString:
    """A refresh run's outcome badge. A failed run is "stale" only when an older good copy was
    there to serve (a success before it); before any success it served nothing: red."""
    if run.status != "failed":
        return format_html(
            '<span class="badge {}">{}</span>',
            STATUS_BADGES.get(run.status, ""),
            run.get_status_display(),
        )
    if first_success is not None and first_success <= run.requested_at:
        return format_html('<span class="badge {}">{}</span>', "warn", "Failed (older copy served)")
    return format_html('<span class="badge {}">{}</span>', "bad", "Failed, nothing to serve yet")
