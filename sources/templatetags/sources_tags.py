"""Record bodies are untrusted: the project's one Markdown renderer (no raw HTML, no images)."""

from __future__ import annotations

from django import template
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
