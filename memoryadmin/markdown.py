"""Untrusted Markdown (memory bodies, source records) to inert HTML.

markdown-it with raw HTML off, images rendered as links, then nh3 as a second wall. No image
is ever an <img>: a remote image would be fetched by every reviewer's browser that opens the
page, telling its host who looked and when (and the CSP's img-src would block it anyway).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.token import Token

URL_SCHEMES = {"http", "https", "mailto"}
# nh3's defaults without <img>: nothing in the output makes the browser fetch anything.
TAGS = set(nh3.ALLOWED_TAGS) - {"img"}
LINK_REL = "noopener noreferrer nofollow"


def _image_as_link(renderer: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = renderer.renderInlineAsText(token.children or [], options, env)
    if not alt.strip():
        alt = src if src.lower().startswith(("https://", "http://")) else "no description"
    label = escapeHtml(f"image: {alt}")
    inside_link = sum((t.type == "link_open") - (t.type == "link_close") for t in tokens[:idx])
    if inside_link > 0:
        return label  # a link cannot hold another: the image's text joins the outer link
    return f'<a href="{escapeHtml(src)}">{label}</a>'


_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
_md.add_render_rule("image", _image_as_link)


def render_untrusted_markdown(text: str) -> str:
    """Safe HTML for untrusted Markdown: formatting and links only, images shown as links."""
    html = _md.render(text or "")
    return nh3.clean(html, tags=TAGS, url_schemes=URL_SCHEMES, link_rel=LINK_REL)
