"""Untrusted Markdown shows images as links, and every response carries the strict CSP.

The browser side (nothing fetched, no violation on any page) is tests/e2e/test_content_security.py.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from django.conf import settings
from django.test import Client
from django.urls import get_resolver, reverse

from memoryadmin.models import Role
from reviews.rendering import render_markdown
from sources.templatetags.sources_tags import untrusted_markdown
from tests.security.test_input_characters import _clients, _fill, _rolled_back, _routes, _values
from tests.security.world import build_team

STRICT = (
    "default-src 'self'; img-src 'self' data:; script-src 'self'; style-src 'self';"
    " object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
TRACKER = "https://tracker.example/pixel.png"
IMAGES_MARKDOWN = (
    "Intro **bold**.\n\n"
    f"![who opened this]({TRACKER}?who=reviewer)\n\n"
    f"![]({TRACKER}?who=anonymous)\n\n"
    "![by reference][pixel]\n\n"
    f"[![badge]({TRACKER}?who=badge)](https://ci.example/)\n\n"
    f'<img src="{TRACKER}?who=raw">\n\n'
    "![inline](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoNik+)\n\n"
    f"[pixel]: {TRACKER}?who=reference\n"
)


class _Fetching(HTMLParser):
    """Elements that make a browser fetch something by themselves, and every link."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.fetching: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        if tag in ("img", "image", "picture", "source", "video", "audio", "iframe", "object"):
            self.fetching.append(f"<{tag} {names}>")
        if tag == "a" and names.get("href"):
            self.links.append(names["href"] or "")
        if names.get("srcset") or names.get("background") or names.get("poster"):
            self.fetching.append(f"<{tag} {names}>")


def _parse(html: str) -> _Fetching:
    parser = _Fetching()
    parser.feed(html)
    return parser


def _main(html: str) -> str:
    return html.split("<main", 1)[1].split("</main>", 1)[0]


def test_it_renders_every_image_as_a_link_and_fetches_nothing():
    # The proposal pages' renderer and the source records' filter are one renderer.
    html = render_markdown(IMAGES_MARKDOWN)
    assert str(untrusted_markdown(IMAGES_MARKDOWN)) == html
    parsed = _parse(html)
    assert parsed.fetching == []
    assert f"{TRACKER}?who=reviewer" in parsed.links
    assert f"{TRACKER}?who=anonymous" in parsed.links
    assert f"{TRACKER}?who=reference" in parsed.links
    assert "https://ci.example/" in parsed.links  # the badge's text joins its link
    assert ">image: who opened this</a>" in html
    assert f">image: {TRACKER}?who=anonymous</a>" in html
    assert ">image: badge</a>" in html
    assert "&lt;img" in html  # raw HTML stays text
    assert not any(link.startswith("data:") for link in parsed.links)


def test_it_shows_images_as_links_on_the_record_and_proposal_pages(
    team, make_user, tmp_path, settings
):  # type: ignore[no-untyped-def]
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    admin = make_user("alice", team=team, role=Role.ADMIN)
    objects = build_team(team, admin, tmp_path, label="alpha", body=IMAGES_MARKDOWN)
    client = Client()
    client.force_login(admin)
    pages = {
        "source record": reverse("source-detail", args=[team.slug, objects.source.pk]),
        "proposal": reverse("proposal-detail", args=[team.slug, objects.proposal.pk]),
    }
    for name, url in pages.items():
        main = _main(client.get(url).content.decode())
        parsed = _parse(main)
        assert "Intro" in main, name
        assert parsed.fetching == [], name
        assert f"{TRACKER}?who=reviewer" in parsed.links, name


def test_it_sends_the_strict_policy_on_every_response(world, make_token):
    """Every URL pattern, as every kind of caller, whatever the status: the header is there."""
    assert settings.CONTENT_SECURITY_POLICY == STRICT
    values = _values(world)
    urls = sorted({_fill(route, values) for route, _ in _routes(get_resolver().url_patterns)})
    urls += ["/no-such-page/", "/api/context/?scope=%00", "/t/alpha/?x=%00"]
    docs = reverse("api-docs")
    failures = []
    for who, client in _clients(world, make_token).items():
        for url in urls:
            response = _rolled_back(lambda: client.get(url))  # noqa: B023
            policy = response.get("Content-Security-Policy")
            if url == docs:
                if policy != (
                    STRICT.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")
                    + "; worker-src blob:"
                ):
                    failures.append((who, url, response.status_code, policy))
            elif policy != STRICT:
                failures.append((who, url, response.status_code, policy))
    assert not failures, "\n".join(map(str, failures[:30])) + f"\n… {len(failures)} in all"


def test_it_keeps_inline_scripts_styles_and_handlers_out_of_every_template():
    """The policy forbids them; the pages would break silently in the browser."""
    root = Path(__file__).resolve().parent.parent.parent / "templates"
    inline = re.compile(
        r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>|<style\b|\sstyle=\"|\son[a-z]+=\"",
        re.IGNORECASE,
    )
    found = [
        f"{path.relative_to(root)}: {match.group()}"
        for path in root.rglob("*.html")
        for match in inline.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not found, found
