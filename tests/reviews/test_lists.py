"""The review queue and decision history lists: the page and the API answer the same rows."""

from __future__ import annotations

import csv
import io

from memoryadmin.audit import Actor
from memoryadmin.models import Scope
from reviews.models import Decision
from reviews.services.decisions import proposal_reject


def _csv(response) -> list[list[str]]:  # type: ignore[no-untyped-def]
    assert response["Content-Type"] == "text/csv", response.status_code
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_it_filters_the_queue_and_history_on_the_page_and_the_api_alike(
    client, reviewer_user, team, repository, token_client
):
    client.force_login(reviewer_user)
    api = token_client(team, [Scope.REVIEWS_READ])
    queue = client.get(f"/t/{team.slug}/reviews/").context["page"]
    assert len(queue.object_list) >= 2
    first = queue.object_list[0]
    word = first.title.split()[0]
    page = client.get(f"/t/{team.slug}/reviews/", {"q": first.ref}).context["page"]
    listed = api.get("/api/reviews/proposals/", {"q": first.ref}).json()["results"]
    assert [m.ref for m in page] == [first.ref] == [m["ref"] for m in listed]
    by_title = client.get(f"/t/{team.slug}/reviews/", {"q": word, "sort": "-title"})
    assert by_title.status_code == 200
    rows = _csv(client.get(f"/t/{team.slug}/reviews/", {"export": "csv"}))
    assert len(rows) == 1 + queue.paginator.count
    other = client.get(f"/t/{team.slug}/reviews/", {"repository": "999999"})
    assert other.status_code == 400  # not this team's repository: an error, not everything
    assert api.get("/api/reviews/proposals/", {"repository": "999999"}).status_code == 400

    proposal_reject(
        actor=Actor(user=reviewer_user), memory=first, comment="duplicate of the runbook"
    )
    history = f"/t/{team.slug}/reviews/history/"
    page = client.get(history, {"q": "runbook"}).context["page"]
    decisions = api.get("/api/reviews/decisions/", {"q": "runbook"}).json()["results"]
    assert [d.pk for d in page] == [d["id"] for d in decisions] == [Decision.objects.get().pk]
    assert [d.pk for d in client.get(history, {"q": first.ref}).context["page"]] == [
        decisions[0]["id"]
    ]
    assert len(client.get(history, {"kind": "approve"}).context["page"].object_list) == 0
    assert len(client.get(history, {"reviewer": "rita"}).context["page"].object_list) == 1
    assert api.get("/api/reviews/decisions/", {"state": "lost"}).status_code == 400
    rows = _csv(client.get(history, {"export": "csv"}))
    assert rows[1][2] == "reject" and first.ref in rows[1][5]


def test_it_filters_the_queue_by_the_day_a_proposal_was_added_on_the_page_and_the_api(
    client, reviewer_user, team, repository, token_client
):
    from datetime import timedelta

    from django.utils import timezone

    from reviews.models import Memory

    client.force_login(reviewer_user)
    api = token_client(team, [Scope.REVIEWS_READ])
    queue = list(client.get(f"/t/{team.slug}/reviews/").context["page"].object_list)
    assert len(queue) >= 2
    old, recent = queue[0], queue[1:]
    Memory.objects.filter(pk=old.pk).update(added_at=timezone.now() - timedelta(days=30))
    today = timezone.localdate().isoformat()
    month_ago = (timezone.localdate() - timedelta(days=30)).isoformat()

    page = client.get(f"/t/{team.slug}/reviews/", {"after": today}).context["page"]
    listed = api.get("/api/reviews/proposals/", {"after": today}).json()["results"]
    assert sorted(m.ref for m in page) == sorted(m["ref"] for m in listed)
    assert sorted(m.ref for m in page) == sorted(m.ref for m in recent)
    page = client.get(f"/t/{team.slug}/reviews/", {"before": month_ago}).context["page"]
    assert [m.ref for m in page] == [old.ref]
    # the proposal page's next/previous follow the same filtered queue, and keep the filter
    first_recent = min(recent, key=lambda m: (m.added_at, m.pk))
    detail = client.get(f"/t/{team.slug}/reviews/p/{old.pk}/", {"after": today}).context
    assert detail["next_pk"] == first_recent.pk  # the old one is outside: the queue's first
    assert detail["queue_query"] == f"?after={today}"
    assert client.get(f"/t/{team.slug}/reviews/", {"after": "yesterday"}).status_code == 400
    bad = api.get("/api/reviews/proposals/", {"after": "2026-13-01"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid-filter"
