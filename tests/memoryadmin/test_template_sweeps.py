"""Scans that keep the pages' words honest: every time a person reads goes through `when` or
`moment` (with its zone), no "(s)" plurals, no count printed before a plural noun without
`pluralize`/`counted` (memoryadmin/templatetags/memoryadmin_format.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
TEMPLATES = sorted((ROOT / "templates").rglob("*.html"))
# The page views: Python that writes sentences people read (messages, page text).
VIEWS = [
    ROOT / name
    for name in (
        "bundles/views.py",
        "bundles/cleanup_views.py",
        "sources/views.py",
        "memoryadmin/views.py",
        "memoryadmin/member_views.py",
        "memoryadmin/dashboard.py",
    )
] + sorted((ROOT / "reviews" / "views").glob("*.py"))

# |date with a time in its format, |time, or a bare {{ something_at }}: times without a zone.
BARE_TIME = re.compile(
    r"\|date(?::\"[^\"]*[HhGgisaAPTOeUcru][^\"]*\")?(?=[\s|}])|\|time\b|\|date\s*}}"
    r"|\{\{\s*[\w.]+_(?:at|since)\s*}}"
)
# A datetime column printed as a date alone is a day in some zone: use when:"date"/moment:"date".
DATE_OF_A_MOMENT = re.compile(r"\{\{\s*[\w.]+_(?:at|since)\|date:")
# "{{ n }} chunks": a count before a plural noun, without pluralize on that count.
BARE_COUNT = re.compile(r"\{\{ ([\w.]+) \}\}(?:</strong>)? ([a-z]+s)\b(?!\{\{)")
NOT_PLURAL_NOUNS = {"is", "ms", "was", "has", "invites", "as", "its", "this", "us"}


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_it_scans_the_templates_and_the_views():
    assert len(TEMPLATES) > 40 and all(path.exists() for path in VIEWS)


@pytest.mark.parametrize("path", TEMPLATES, ids=_rel)
def test_every_time_on_a_page_has_its_zone(path):
    text = path.read_text()
    found = BARE_TIME.findall(text) + DATE_OF_A_MOMENT.findall(text)
    assert not found, f"{_rel(path)}: use |when or |moment instead of {found}"


@pytest.mark.parametrize("path", TEMPLATES + VIEWS, ids=_rel)
def test_no_page_writes_a_plural_as_s_in_brackets(path):
    text = path.read_text()
    assert "(s)" not in text and "(es)" not in text, f"{_rel(path)}: use pluralize or ngettext"


@pytest.mark.parametrize("path", TEMPLATES, ids=_rel)
def test_no_count_stands_before_a_plural_noun_without_pluralize(path):
    bare = [
        f"{{{{ {count} }}}} {noun}"
        for count, noun in BARE_COUNT.findall(path.read_text())
        if noun not in NOT_PLURAL_NOUNS
    ]
    assert not bare, f"{_rel(path)}: {bare} (use |pluralize or |counted)"


@pytest.mark.parametrize(
    "line, caught",
    [
        ('{{ r.updated|date:"Y-m-d H:i" }}', True),
        ("{{ r.updated|date }}", True),
        ('{{ run.created_at|date:"Y-m-d" }}', True),
        ("{{ token.created_at }}", True),
        ('{{ b.start|date:"Y-m-d" }}', False),  # a week's first day: a date, not a moment
        ('{{ r.updated|moment }} {{ r.updated|when:"seconds" }}', False),
    ],
)
def test_the_time_scan_catches_what_it_should(line, caught):
    assert bool(BARE_TIME.search(line) or DATE_OF_A_MOMENT.search(line)) is caught


@pytest.mark.parametrize(
    "line, caught",
    [
        ("<strong>{{ summary.total }}</strong> chunks", True),
        ("{{ d }} days", True),
        ("{{ d }} day{{ d|pluralize }}", False),
        ("{{ run.duration_ms }} ms", False),
    ],
)
def test_the_count_scan_catches_what_it_should(line, caught):
    found = [noun for _, noun in BARE_COUNT.findall(line) if noun not in NOT_PLURAL_NOUNS]
    assert bool(found) is caught
