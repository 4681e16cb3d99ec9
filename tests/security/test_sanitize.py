"""Memory Markdown from outside is rendered inert on every page that shows it."""

from __future__ import annotations

from collections import Counter
from html.parser import HTMLParser

from django.test import Client
from django.urls import reverse

from memoryadmin.models import Role
from tests.security.world import build_team

HOSTILE_MARKDOWN = (
    "Intro **bold**.\n\n"
    "<script>alert('s')</script>\n\n"
    "[js](javascript:alert('j')) [js2](JaVaScRiPt:alert(1)) [ent](&#106;avascript:alert(1))\n\n"
    '<a href="javascript:alert(2)">raw link</a>\n\n'
    '<img src="x" onerror="alert(3)">\n\n'
    '<div onmouseover="alert(4)">hover</div>\n\n'
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCg1KTwvc2NyaXB0Pg==)\n\n"
    "![img](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoNik+)\n\n"
    '<iframe src="https://evil.example/"></iframe>\n\n'
    "<style>body{display:none}</style>\n\n"
    "<svg><script>alert(7)</script></svg>\n\n"
    '<form action="https://evil.example/"><input name="x"></form>\n'
)

FORBIDDEN_TAGS = {"script", "iframe", "style", "svg", "form", "input", "object", "embed"}


class _Elements(HTMLParser):
    """Real elements and attributes of the page (escaped text is not an element)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in FORBIDDEN_TAGS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"{tag} {name}=")
            target = "".join((value or "").split()).lower()
            if name in ("href", "src", "action", "formaction") and target.startswith(
                ("javascript:", "data:", "vbscript:")
            ):
                self.found.append(f"{tag} {name}={value}")


def _dangerous(html: str) -> list[str]:
    parser = _Elements()
    parser.feed(html)
    return parser.found


def _main(html: str) -> str:
    """The page's <main> (the layout's own scripts, e.g. htmx, are not memory content)."""
    return html.split("<main", 1)[1].split("</main>", 1)[0] if "<main" in html else html


def _pages(team, objects) -> dict[str, str]:  # type: ignore[no-untyped-def]
    slug = team.slug
    return {
        "source record": reverse(
            "source-detail", kwargs={"team_slug": slug, "source_id": objects.source.pk}
        ),
        "proposal": reverse(
            "proposal-detail", kwargs={"team_slug": slug, "memory_pk": objects.proposal.pk}
        ),
        "brain chunks": reverse("brain", kwargs={"team_slug": slug}),
        "review queue": reverse("review-queue", kwargs={"team_slug": slug}),
    }


def test_it_renders_hostile_markdown_inert_on_record_proposal_and_chunk_pages(
    team, other_team, make_user, tmp_path, settings
):
    """The hostile team's pages hold no more active elements than a benign team's same pages."""
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    settings.REPOSITORY_ALLOW_LOCAL_REMOTES = True
    admin = make_user("alice", team=team, role=Role.ADMIN)
    other = make_user("otto", team=other_team, role=Role.ADMIN)
    hostile = build_team(team, admin, tmp_path, label="alpha", body=HOSTILE_MARKDOWN)
    benign = build_team(other_team, other, tmp_path, label="beta", body="Plain text.\n")
    client, baseline = Client(), Client()
    client.force_login(admin)
    baseline.force_login(other)
    benign_pages = _pages(other_team, benign)
    for name, url in _pages(team, hostile).items():
        response = client.get(url)
        assert response.status_code == 200, name
        main = _main(response.content.decode())
        assert "Intro" in main or "alpha proposal" in main, f"{name}: the memory is not shown"
        expected = _dangerous(_main(baseline.get(benign_pages[name]).content.decode()))
        assert Counter(_dangerous(main)) == Counter(expected), name
