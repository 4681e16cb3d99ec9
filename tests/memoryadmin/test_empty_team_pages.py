"""A new team's pages as its first admin sees them (no sources, repositories, brain, tokens
or other members): no card or table is left empty; each says what goes there and how."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import get_resolver

from memoryadmin.models import Role
from tests.security.test_input_characters import _routes

# Routes a new team can open: no id but the team's; POST-only ones answer 405 and are skipped.
# templates/webhooks/ is left to the webhook pages' own work.
SKIPPED = ("t/<slug:team_slug>/webhooks/",)


def new_team_pages() -> list[str]:
    return sorted(
        route
        for route, _ in _routes(get_resolver().url_patterns)
        if route.startswith("t/<slug:team_slug>/")
        and route.count("<") == 1
        and not route.startswith(SKIPPED)
    )


def _text(html: str) -> str:
    html = re.sub(r"<(script|style|svg|form)\b.*?</\1>", " ", html, flags=re.S)
    text = re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).strip()
    return re.sub(r" ([,.;:])", r"\1", text)


def _sections(html: str) -> list[str]:
    main = re.search(r"<main\b[^>]*>(.*)</main>", html, re.S)
    assert main, "no <main>"
    return re.findall(r"<section\b[^>]*>(.*?)</section>", main.group(1), re.S)


@pytest.mark.parametrize("route", new_team_pages())
def test_no_card_or_table_of_a_new_team_is_empty(client, admin_user, team, route):
    client.force_login(admin_user)
    response = client.get("/" + route.replace("<slug:team_slug>", team.slug))
    if response.status_code == 405:
        pytest.skip("POST only")
    assert response.status_code == 200
    html = response.content.decode()
    assert "{#" not in html and "#}" not in html  # a comment Django printed (one line only)
    for section in _sections(html):
        heading = re.search(r"<h2\b[^>]*>(.*?)</h2>", section, re.S)
        rest = section.replace(heading.group(0), "") if heading else section
        assert _text(rest) or "<form" in rest, f"empty card: {_text(section)!r}"
        for body in re.findall(r"<tbody>(.*?)</tbody>", section, re.S):
            assert "<td" in body or "<th" in body, f"empty table in {_text(section)[:80]!r}"


NEW_TEAM_SENTENCES = {
    "": [
        "No sources yet. Add a source",
        "No repository yet. Add a MemoryRail repository",
        "Empty. The brain fills from approved sources",
        "No decisions in the last 12 weeks. The chart fills as reviewers",
    ],
    "brain/": ["No chunks yet. The brain fills from approved sources", "Import a bundle file"],
    "reviews/": ["no repository is connected yet. Add a repository"],
    "reviews/history/": ["No decisions yet. Each approval or rejection in the review queue"],
    "reviews/repositories/": ["No repositories yet. A repository is a git repository"],
    "sources/": ["No sources yet. A source is a folder", "add one, check its preview"],
    "tokens/": ["No tokens yet. Create one above for an agent or a script"],
    "invitations/": ["No invitations yet. Invite someone by e-mail above"],
    "usage/": ["No agent has read anything yet. Agents read with an API token"],
}


@pytest.mark.parametrize("path", sorted(NEW_TEAM_SENTENCES))
def test_a_new_teams_empty_lists_say_what_fills_them(client, admin_user, team, path):
    client.force_login(admin_user)
    text = _text(client.get(f"/t/{team.slug}/{path}").content.decode())
    for sentence in NEW_TEAM_SENTENCES[path]:
        assert sentence in text, sentence


def test_a_viewer_is_told_who_fills_an_empty_list(client, make_user, team):
    client.force_login(make_user("vera", team=team, role=Role.VIEWER))
    sources = _text(client.get(f"/t/{team.slug}/sources/").content.decode())
    assert "an admin adds one and approves it" in sources
    queue = _text(client.get(f"/t/{team.slug}/reviews/").content.decode())
    assert "An admin adds a repository" in queue
