"""One definition of the review queue's filters (`QueueFilterSet`): the API and the queue page
read them strictly (a bad value is a 400 with a code), the proposal pages' previous/next
(`selectors.review_queue`) forgivingly; for the same good filters all three give one queue."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryadmin.audit import Actor
from memoryadmin.models import Scope
from memoryadmin.tokens import token_create
from reviews import selectors
from reviews.models import Memory, Repository

TYPES = ("attempt", "decision", "gotcha")


@pytest.fixture
def queue(team, other_team, reviewer_user):  # type: ignore[no-untyped-def]
    """30 proposals over two repositories, three types, both flags, five days, some assigned
    to the reviewer; plus a decided memory and another team's proposal, in no queue."""
    repositories = [
        Repository.objects.create(team=team, name=name, remote_url=f"file:///srv/{name}.git")
        for name in ("app", "docs")
    ]
    now = timezone.now()
    memories = Memory.objects.bulk_create(
        Memory(
            team=team,
            repository=repositories[n % 2],
            memory_id=f"20260301-queue-{n}",
            ref=f"QUE-{n:04x}",
            type=TYPES[n % 3],
            title=f"Queued {n:02d}",
            status="proposed" if n < 30 else "active",
            path=f".memoryrail/memories/20260301-queue-{n}.md",
            blob_sha="0" * 40,
            created="2026-03-01T00:00:00.000Z",
            updated="2026-03-01T00:00:00.000Z",
            has_secret=n % 4 == 0,
            is_stale=n % 5 == 0,
            added_at=now - timedelta(days=10 * (n % 5), minutes=n),
        )
        for n in range(31)
    )
    for memory in memories[::3]:
        memory.assigned_reviewers.add(reviewer_user)
    elsewhere = Repository.objects.create(team=other_team, name="app", remote_url="file:///x")
    Memory.objects.create(
        team=other_team,
        repository=elsewhere,
        memory_id="20260301-elsewhere",
        ref="ELS-0001",
        type="attempt",
        title="Another team's",
        status="proposed",
        path=".memoryrail/memories/20260301-elsewhere.md",
        blob_sha="0" * 40,
        created="2026-03-01T00:00:00.000Z",
        updated="2026-03-01T00:00:00.000Z",
        added_at=now,
    )
    return {"repositories": [str(r.pk) for r in repositories], "elsewhere": str(elsewhere.pk)}


@pytest.fixture
def api(team, reviewer_user):  # type: ignore[no-untyped-def]
    """The reviewer's own token: `assigned=me` is theirs through it."""
    from rest_framework.test import APIClient

    _, secret = token_create(
        actor=Actor(user=reviewer_user), team=team, name="mine", scopes=[Scope.REVIEWS_READ]
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def _through_api(api, params: dict[str, str]) -> list[str]:  # type: ignore[no-untyped-def]
    response = api.get("/api/reviews/proposals/", params)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["next"] is None  # one page holds the whole queue
    return [m["ref"] for m in body["results"]]


def _through_page(client, team, params: dict[str, str]) -> list[str]:  # type: ignore[no-untyped-def]
    response = client.get(f"/t/{team.slug}/reviews/", params)
    assert response.status_code == 200
    return [m.ref for m in response.context["page"]]


def _forgiving(team, user, params: dict[str, str]) -> list[str]:  # type: ignore[no-untyped-def]
    """The proposal pages' queue: the filters as a proposal URL carries them."""
    filters = selectors.queue_filters(params)
    return [m.ref for m in selectors.review_queue(team, filters=filters, user=user)]


def _days() -> list[dict[str, str]]:
    mid = (timezone.localdate() - timedelta(days=15)).isoformat()
    return [{}, {"after": mid}, {"before": mid}, {"after": mid, "before": mid}]


@pytest.mark.parametrize("assigned", ["", "me"])
@pytest.mark.parametrize("flag", ["", "secret", "stale", "clean"])
def test_the_api_the_queue_page_and_the_proposal_pages_give_one_queue(
    queue, api, client, team, reviewer_user, flag, assigned
):
    client.force_login(reviewer_user)
    answers = set()
    for repository, kind, days in itertools.product(
        ["", *queue["repositories"]], ["", *TYPES[:2]], _days()
    ):
        params = {"repository": repository, "type": kind, "flag": flag, "assigned": assigned}
        params = {k: v for k, v in {**params, **days}.items() if v}
        refs = _through_api(api, params)
        assert _forgiving(team, reviewer_user, params) == refs, params
        assert _through_page(client, team, params) == refs, params
        answers.add(tuple(refs))
    assert len(answers) > 3  # the filters narrow: not one queue for every combination


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("after", "yesterday"),
        ("before", "2026-13-01"),
        ("type", "nonsense"),
        ("flag", "dirty"),
        ("assigned", "you"),
    ],
)
def test_a_bad_value_is_a_400_on_the_api_and_narrows_nothing_on_the_proposal_pages(
    queue, api, team, reviewer_user, param, value
):
    good = {"type": "attempt"} if param == "flag" else {"flag": "secret"}
    response = api.get("/api/reviews/proposals/", {**good, param: value})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid-filter" and list(error["details"]) == [param]
    narrowed = _forgiving(team, reviewer_user, good)
    assert narrowed == _through_api(api, good) and len(narrowed) == 10 - 2 * (param != "flag")
    assert _forgiving(team, reviewer_user, {**good, param: value}) == narrowed


def test_a_repository_not_the_teams_is_a_400_on_the_api_and_an_empty_proposal_queue(
    queue, api, team, reviewer_user
):
    for value in (queue["elsewhere"], "999999"):
        response = api.get("/api/reviews/proposals/", {"repository": value})
        assert response.status_code == 400
        assert response.json()["error"]["details"].keys() == {"repository"}
        assert _forgiving(team, reviewer_user, {"repository": value}) == []
    # not a number: a proposal URL does not carry it on
    assert selectors.queue_filters({"repository": "app"})["repository"] == ""
    assert _forgiving(team, reviewer_user, {"repository": "app"}) == _forgiving(
        team, reviewer_user, {}
    )


def test_assigned_to_me_is_no_ones_without_a_person(queue, team, reviewer_user):
    mine = _forgiving(team, reviewer_user, {"assigned": "me"})
    assert len(mine) == 10
    assert _forgiving(team, None, {"assigned": "me"}) == []


def test_the_proposal_pages_queue_is_one_query_however_many_filters(queue, team, reviewer_user):
    filters = selectors.queue_filters(
        {"type": "attempt", "flag": "clean", "assigned": "me", "after": "2020-01-01"}
    )
    with CaptureQueriesContext(connection) as queries:
        ids = list(
            selectors.review_queue(team, filters=filters, user=reviewer_user).values_list(
                "pk", flat=True
            )
        )
    assert ids and len(queries) == 1
    filters["repository"] = queue["repositories"][0]
    with CaptureQueriesContext(connection) as queries:
        list(selectors.review_queue(team, filters=filters, user=reviewer_user))
    # the queue and its assignees, and the repository checked to be the team's
    assert len(queries) == 3
