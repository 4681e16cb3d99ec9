"""Template helpers of the team lists: the pager's page links and thousands separators."""

from __future__ import annotations

from django import template
from django.core.paginator import Page

register = template.Library()


@register.filter
def page_links(page: Page) -> list[int | str]:
    """The page numbers around the current one, the first and the last; '…' for the gaps."""
    return list(page.paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1))


@register.filter
def thousands(value: int) -> str:
    """10826 → 10,826 (the pager's counts)."""
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return str(value)
