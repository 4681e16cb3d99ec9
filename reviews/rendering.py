"""Markdown bodies rendered safely: the one renderer for untrusted Markdown (no images)."""

from __future__ import annotations

from memoryadmin.markdown import render_untrusted_markdown


def render_markdown(text: str) -> str:
    return render_untrusted_markdown(text)
