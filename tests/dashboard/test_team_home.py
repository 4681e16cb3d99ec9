"""The team home page: sources, review queue and timing, push failures, brain, weekly chart."""

from __future__ import annotations

from datetime import datetime, time, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from bundles.models import Chunk
from memoryadmin.dashboard import weekly_bar_chart
from memoryadmin.models import Role
from reviews.models import Decision, DecisionItem, Memory, PushState, Repository
from reviews.selectors import dashboard_summary, short_duration
from sources.models import Health, Source, SourceState


def populate(team, *, scale: int = 1) -> Repository:
    now = timezone.now()
    for n, health in enumerate([Health.FRESH, Health.STALE, Health.DENIED] * scale):
        Source.objects.create(
            team=team,
            kind="local",
            identity=f"/srv/memories/{scale}/{health}-{n}",
            display_name=f"{health} source {n}",
            state=SourceState.APPROVED,
            health=health,
            stale_since=now if health == Health.STALE else None,
            denied_since=now if health == Health.DENIED else None,
            last_error_code="http-403" if health == Health.DENIED else "",
        )
    Source.objects.create(team=team, kind="local", identity=f"/srv/pending-{scale}")
    repository = Repository.objects.create(
        team=team, name=f"app-{scale}", remote_url="https://git.example.org/app.git"
    )
    memories = Memory.objects.bulk_create(
        Memory(
            team=team,
            repository=repository,
            memory_id=f"2026010{scale}-p-{n}",
            ref=f"DEC-{scale:01x}{n:03x}",
            type="decision",
            title=f"Proposal {n}",
            status="proposed",
            path=f".memoryrail/memories/p-{n}.md",
            blob_sha="a" * 40,
            created="2026-01-01",
            updated="2026-01-01",
            added_at=now - timedelta(days=40 - n),
        )
        for n in range(20 * scale)
    )
    # an hour ago, but not before this week began: in a Monday's first hour "an hour ago" is
    # last week, and the twelfth decision would fall out of the dashboard's twelve weeks
    today = timezone.localdate(now)
    monday = datetime.combine(today - timedelta(days=today.weekday()), time.min)
    monday = timezone.make_aware(monday)
    latest = max(now - timedelta(hours=1), monday)
    for n in range(12 * scale):
        decided = latest - timedelta(weeks=n % 12)
        state = PushState.FAILED if n % 5 == 0 else PushState.PUSHED
        decision = Decision.objects.create(
            team=team,
            repository=repository,
            kind="approve" if n % 3 else "reject",
            actor_label="user:rita",
            author_name="Rita",
            author_email="rita@example.org",
            state=state,
            state_detail="remote hook refused" if state == PushState.FAILED else "",
            created_at=decided,
        )
        DecisionItem.objects.create(
            decision=decision,
            memory=memories[n] if n < len(memories) else None,
            memory_key=f"k-{n}",
            ref=f"DEC-f{n:03x}",
            title=f"Decided {n}",
            path="p",
            blob_sha="b" * 40,
            proposed_at=decided - timedelta(hours=2),
        )
    Chunk.objects.bulk_create(
        Chunk(team=team, content=f"c{scale}-{n}", content_hash=f"{scale}-{n}", memory_type=kind)
        for n, kind in enumerate(["semantic"] * 3 * scale + ["episodic"] * 2 * scale)
    )
    return repository


def test_it_shows_everything_at_a_glance(client, team, admin_user):
    populate(team)
    client.force_login(admin_user)
    page = client.get(reverse("team-home", args=["alpha"])).content.decode()
    # sources: counts and the worst ones, linked
    assert "1 fresh" in page and "1 stale" in page and "1 denied" in page
    denied = Source.objects.get(health=Health.DENIED)
    assert reverse("source-detail", args=["alpha", denied.pk]) in page
    assert "1 waiting for approval" in page
    # queue size and age, oldest linked
    assert "<strong>20</strong> proposals waiting" in page
    oldest = Memory.objects.order_by("added_at").first()
    assert reverse("proposal-detail", args=["alpha", oldest.pk]) in page
    assert "Median time to decision (30 days): <strong>2 h 0 min</strong>" in page
    # push failures with links to the proposals
    assert "3 push failures" in page
    failed = DecisionItem.objects.filter(decision__state="failed").first()
    assert reverse("proposal-detail", args=["alpha", failed.memory_id]) in page
    # brain size by type
    assert "semantic: 3" in page and "episodic: 2" in page
    # the chart: inline SVG, labelled, with the numbers in a table
    assert '<svg role="img" aria-labelledby="chart-title chart-desc"' in page
    assert '<title id="chart-title">Proposals decided per week, last 12 weeks</title>' in page
    assert "12 decided in total" in page
    assert "<caption>Proposals decided per week</caption>" in page
    assert page.count("<rect ") >= 12
    assert "<script" not in page.split("<main", 1)[-1]


def test_it_keeps_the_team_home_query_count_flat(
    client, team, admin_user, django_assert_max_num_queries
):
    populate(team)
    client.force_login(admin_user)
    url = reverse("team-home", args=["alpha"])
    client.get(url)  # warm the session
    with django_assert_max_num_queries(16) as small:
        assert client.get(url).status_code == 200
    # 4 session/user/team/role + 1 sources + 7 reviews + 2 brain + 1 nav + 1 activity
    populate(team, scale=5)
    with django_assert_max_num_queries(len(small.captured_queries)):
        assert client.get(url).status_code == 200


def test_it_computes_the_median_and_the_weeks(team):
    repository = populate(team)
    summary = dashboard_summary(team)
    assert summary["median_decision_time"] == timedelta(hours=2)
    assert summary["decided_30d"] == 5  # weeks 0..4 of 12 decisions, one per week
    assert len(summary["weeks"]) == 12 and sum(w["total"] for w in summary["weeks"]) == 12
    assert summary["weeks"][-1]["start"] <= timezone.localdate()
    assert summary["push_failures"] == 3 and len(summary["failed_decisions"]) == 3
    assert repository.pk
    assert short_duration(timedelta(minutes=45)) == "45 min"
    assert short_duration(timedelta(days=3, hours=4, minutes=5)) == "3 d 4 h"


def test_it_draws_bars_in_proportion_and_survives_empty_weeks():
    weeks = [
        {"start": None, "approved": a, "rejected": r, "total": a + r}
        for a, r in [(0, 0), (2, 2), (4, 0)]
    ]
    chart = weekly_bar_chart(weeks)
    first, second, third = chart["bars"]
    assert first["approved_h"] == first["rejected_h"] == 0
    assert second["approved_h"] == second["rejected_h"] == third["approved_h"] / 2
    assert third["approved_y"] + third["approved_h"] == chart["baseline"]
    assert (
        weekly_bar_chart([{"start": None, "approved": 0, "rejected": 0, "total": 0}])["peak"] == 0
    )


@pytest.mark.parametrize("role", [Role.VIEWER, None])
def test_it_shows_the_dashboard_to_members_only(client, team, other_team, make_user, role):
    populate(team)
    user = make_user("someone", team=team if role else other_team, role=role or Role.ADMIN)
    client.force_login(user)
    response = client.get(reverse("team-home", args=["alpha"]))
    assert response.status_code == (200 if role else 404)
