"""Record bodies are untrusted: Markdown without raw HTML, then sanitised by nh3."""

from __future__ import annotations

import nh3
from django import template
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

register = template.Library()
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False})


@register.filter
def untrusted_markdown(text: str) -> SafeString:
    html = _markdown.render(text or "")
    # nh3 removes anything that is not plain formatting; its output is safe to embed.
    return mark_safe(nh3.clean(html, link_rel="noopener noreferrer nofollow"))  # noqa: S308


HEALTH_BADGES = {"fresh": "ok", "stale": "warn", "denied": "bad", "never": ""}
STATUS_BADGES = {"succeeded": "ok", "failed": "warn", "denied": "bad", "skipped": ""}


@register.filter
def health_badge(value: str) -> str:
    return HEALTH_BADGES.get(value, "")


@register.filter
def status_badge(value: str) -> str:
    return STATUS_BADGES.get(value, "")
