"""Numbers and times in words (memoryadmin/templatetags/memoryadmin_format.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.template import Context, Template
from django.utils import timezone

from memoryadmin.templatetags.memoryadmin_format import ago, counted, every, tally, when

NOW = datetime(2026, 3, 1, 14, 5, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("n", "noun", "words"),
    [
        (1, "commit", "1 commit"),
        (0, "commit", "0 commits"),
        (2, "commit", "2 commits"),
        (1, "entry,entries", "1 entry"),
        (3, "entry,entries", "3 entries"),
        ("x", "commit", ""),
    ],
)
def test_counted(n, noun, words):
    assert counted(n, noun) == words


@pytest.mark.parametrize(
    ("delta", "words"),
    [
        (timedelta(seconds=5), "just now"),
        (timedelta(seconds=59), "just now"),
        (timedelta(minutes=1), "1 minute ago"),
        (timedelta(minutes=15, seconds=9), "15 minutes ago"),
        (timedelta(hours=2, minutes=3), "2 hours ago"),
        (timedelta(days=1), "1 day ago"),
        (-timedelta(minutes=5), "in 5 minutes"),
    ],
)
def test_ago(delta, words):
    assert ago(NOW - delta, now=NOW) == words


@pytest.mark.parametrize(
    ("interval", "words"),
    [
        (timedelta(minutes=15), "every 15 minutes"),
        (timedelta(hours=1), "every hour"),
        (timedelta(hours=2), "every 2 hours"),
        (timedelta(days=1), "every day"),
        (timedelta(seconds=90), "every 90 seconds"),
        (600, "every 10 minutes"),
    ],
)
def test_every(interval, words):
    assert every(interval) == words


def test_when_names_the_zone(settings):
    assert when(NOW) == "2026-03-01 14:05 UTC"
    assert when(NOW, True) == "2026-03-01 14:05:30 UTC"
    with timezone.override("Europe/Berlin"):
        assert when(NOW) == "2026-03-01 15:05 CET"


def test_when_has_a_seconds_and_a_date_form():
    assert when(NOW, "seconds") == "2026-03-01 14:05:30 UTC"
    assert when(NOW, "date") == "2026-03-01"
    assert when(None) == "" and when("2026-03-01") == ""


def _moment(value, form: str = "") -> str:  # type: ignore[no-untyped-def]
    source = "{% load memoryadmin_format %}{{ t|moment" + (f':"{form}"' if form else "") + " }}"
    return Template(source).render(Context({"t": value}))


def test_moment_is_a_time_element_with_its_zone_and_how_long_ago_within_a_day():
    now = timezone.now().replace(microsecond=0)
    recent = _moment(now - timedelta(minutes=3))
    assert recent.startswith(f'<time datetime="{(now - timedelta(minutes=3)).isoformat()}">')
    assert ' UTC</time> <small class="ago">(3 minutes ago)</small>' in recent
    assert "(in 2 hours)" in _moment(now + timedelta(hours=2, seconds=5))
    old = _moment(NOW)
    assert old == f'<time datetime="{NOW.isoformat()}">2026-03-01 14:05 UTC</time>'
    assert _moment(NOW, "date") == (
        f'<time datetime="{NOW.isoformat()}" title="2026-03-01 14:05 UTC">2026-03-01</time>'
    )
    assert ">3 hours ago</time>" in _moment(now - timedelta(hours=3), "ago")
    assert 'title="2026-03-01 14:05 UTC"' in _moment(NOW, "ago")
    never = Template('{% load memoryadmin_format %}{{ t|moment|default:"never" }}')
    assert never.render(Context({"t": None})) == "never"


def test_tally_never_shows_a_python_repr():
    assert tally({"inserted": 3, "already_present": 1}) == "3 inserted, 1 already present"
    assert tally({}) == "nothing"
    html = Template("{% load memoryadmin_format %}{{ r|tally }}").render(
        Context({"r": {"inserted": 2}})
    )
    assert html == "2 inserted" and "{" not in html
