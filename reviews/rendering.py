"""Markdown bodies rendered safely: markdown-it with raw HTML off, then nh3 as a second wall."""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def render_markdown(text: str) -> str:
    html = _md.render(text)
    return nh3.clean(html, url_schemes={"http", "https", "mailto"}, link_rel="noopener noreferrer")
