"""Routing rules on a repository: validation, audit, assignment at sync, the assigned filter."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from memoryadmin.audit import Actor
from memoryadmin.models import AuditEvent, Role
from reviews.models import Memory
from reviews.services.repositories import repository_sync
from reviews.services.routing import repository_routing_update
from tests.reviews.conftest import M, memory_text

SQLITE = "20260201-use-sqlite"  # decision, proposed
ATTEMPT = "20260203-cache-attempt"  # attempt, proposed
LINKED = "20260301-index-schema"


def assignees(repository, memory_id: str) -> list[str]:
    memory = Memory.objects.get(repository=repository, memory_id=memory_id)
    return sorted(memory.assigned_reviewers.values_list("username", flat=True))


@pytest.fixture
def bob(make_user, team):  # type: ignore[no-untyped-def]
    return make_user("bob", team=team, role=Role.REVIEWER)


def test_it_rejects_unknown_users_and_users_who_cannot_review(
    repository, admin_user, viewer_user, make_user, other_team
):
    make_user("olga", team=other_team, role=Role.REVIEWER)
    with pytest.raises(ValidationError) as caught:
        repository_routing_update(
            actor=Actor(user=admin_user),
            repository=repository,
            text="decision: alice nobody\nsrc/: victor olga\nbroken line\n",
        )
    assert caught.value.message_dict["rules"] == [
        "Line 3: write `pattern-or-type: user1 user2`.",
        "Line 1: unknown user nobody.",
        "Line 2: victor, olga cannot review for this team (needs the reviewer or admin role).",
    ]
    repository.refresh_from_db()
    assert repository.routing_rules == []


def test_it_lets_only_team_admins_change_the_rules(repository, reviewer_user):
    with pytest.raises(PermissionDenied):
        repository_routing_update(
            actor=Actor(user=reviewer_user), repository=repository, text="decision: rita\n"
        )


def test_it_assigns_by_type_and_by_links_at_sync_and_when_rules_change(
    repository, remote, admin_user, reviewer_user, bob
):
    repository_routing_update(
        actor=Actor(user=admin_user),
        repository=repository,
        text="decision: rita\nsrc/db/: bob\n*.md: alice\n",
    )
    event = AuditEvent.objects.get(action="repository.routing-update")
    assert event.data["after"][0] == {"pattern": "decision", "reviewers": ["rita"]}
    assert event.actor_label == "user:alice"
    assert assignees(repository, SQLITE) == ["alice", "rita"]
    assert assignees(repository, ATTEMPT) == ["alice"]
    # a new proposal linked to src/db arrives with the next sync
    remote.commit(
        {
            f"{M}/{LINKED}.md": memory_text(
                LINKED, type="constraint", status="proposed", links=["src/db/schema.sql"]
            )
        },
        "Propose a constraint",
    )
    repository_sync(repository_id=repository.pk)
    assert assignees(repository, LINKED) == ["alice", "bob"]
    # active memories are never assigned
    assert not Memory.objects.filter(status="active", assigned_reviewers__isnull=False).exists()
    repository_routing_update(actor=Actor(user=admin_user), repository=repository, text="")
    assert assignees(repository, LINKED) == []
    assert AuditEvent.objects.filter(action="repository.routing-update").count() == 2


def test_it_filters_the_queue_and_the_api_by_assigned_to_me(
    client, repository, admin_user, reviewer_user, token_client, team, make_token
):
    repository_routing_update(
        actor=Actor(user=admin_user), repository=repository, text="attempt: rita\n"
    )
    client.force_login(reviewer_user)
    page = client.get(reverse("review-queue", args=["alpha"]), {"assigned": "me"})
    text = page.content.decode()
    assert "1 proposal waiting" in text and "Caching the manifest failed" in text
    assert "Use SQLite" not in text
    everyone = client.get(reverse("review-queue", args=["alpha"])).content.decode()
    assert "3 proposals waiting" in everyone
    # session user through the API
    mine = client.get("/api/reviews/proposals/", {"team": "alpha", "assigned": "me"}).json()
    assert [p["id"] for p in mine["results"]] == [ATTEMPT]
    assert mine["results"][0]["assigned_reviewers"] == ["rita"]
    # a token acts for the person who created it
    from rest_framework.test import APIClient

    api = APIClient()
    from memoryadmin.tokens import token_create

    _, secret = token_create(
        actor=Actor(user=reviewer_user), team=team, name="rita's", scopes=["reviews:read"]
    )
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    body = api.get("/api/reviews/proposals/", {"assigned": "me"}).json()
    assert [p["id"] for p in body["results"]] == [ATTEMPT]
    anonymous_token = token_client(team, ["reviews:read"])
    assert anonymous_token.get("/api/reviews/proposals/?assigned=me").json()["results"] == []
    repo = client.get(f"/api/reviews/repositories/{repository.pk}/", {"team": "alpha"}).json()
    assert repo["routing_rules"] == [{"pattern": "attempt", "reviewers": ["rita"]}]


def test_it_edits_rules_in_the_repository_page_for_admins_only(
    client, repository, admin_user, viewer_user, reviewer_user, make_user, other_team
):
    url = reverse("repository-routing", args=["alpha", repository.pk])
    client.force_login(viewer_user)
    assert client.post(url, {"rules": "decision: rita"}).status_code == 403
    page = client.get(reverse("repository-detail", args=["alpha", repository.pk])).content
    assert b"Reviewer routing" in page and b"Save routing" not in page
    client.force_login(reviewer_user)
    assert client.post(url, {"rules": "decision: rita"}).status_code == 403
    client.force_login(admin_user)
    response = client.post(url, {"rules": "decision: rita ghost\n"})
    assert response.status_code == 400
    assert "Line 1: unknown user ghost." in response.content.decode()
    response = client.post(url, {"rules": "decision: rita\n"})
    assert response.status_code == 302
    page = client.get(reverse("repository-detail", args=["alpha", repository.pk])).content
    assert b"decision: rita" in page  # the textarea shows the rules back
    outsider = make_user("oscar", team=other_team, role=Role.ADMIN)
    client.force_login(outsider)
    assert client.post(url, {"rules": ""}).status_code == 404
