"""Template helpers of the team lists: sortable column headers, the pager's page links and
thousands separators."""

from __future__ import annotations

from typing import Any

from django import template
from django.core.paginator import Page
from django.http import QueryDict
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()

ARROWS = {"ascending": "▲", "descending": "▼"}


@register.simple_tag(takes_context=True)
def sort_header(context: template.Context, name: str, label: str) -> SafeString:
    """A `<th>` whose link sorts the list by `name` (a URL name of the FilterSet's `sort`),
    keeping the other filters (at `list_url` when the page sets it); a second click reverses
    it. `aria-sort` and an arrow say how the list is sorted now. A name the FilterSet does not
    whitelist is a template error."""
    filterset = context["listing"].filterset
    sort = filterset.filters["sort"]
    if name not in sort.param_map:
        raise template.TemplateSyntaxError(f"{name!r} is not a sort of {type(filterset).__name__}")
    current = sort.current(filterset)
    direction = ""
    if current == name:
        direction = "ascending"
    elif current == f"-{name}":
        direction = "descending"
    target = f"-{name}" if direction == "ascending" else name
    query = (
        filterset.data.copy() if isinstance(filterset.data, QueryDict) else QueryDict(mutable=True)
    )
    query["sort"] = target
    for gone in ("page", "export"):
        query.pop(gone, None)
    then = "descending" if target.startswith("-") else "ascending"
    return format_html(
        '<th scope="col"{}><a class="sort" href="{}?{}" title="Sort by {}, {}">{}'
        '<span class="sort-arrow{}" aria-hidden="true">{}</span></a></th>',
        format_html(' aria-sort="{}"', direction) if direction else "",
        context.get("list_url", ""),
        query.urlencode(),
        label,
        then,
        label,
        "" if direction else " muted",
        ARROWS.get(direction, "↕"),
    )


@register.filter
def page_links(page: Page) -> list[int | str]:
    """The page numbers around the current one, the first and the last; '…' for the gaps."""
    return list(page.paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1))


@register.filter
def thousands(value: Any) -> str:
    """10826 → 10,826 (the pager's counts)."""
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return str(value)
