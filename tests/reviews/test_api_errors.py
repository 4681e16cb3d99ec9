"""Every refusal of the reviews API, whole: status, code, message and details (one error table).

The views raise nothing themselves: the services' domain errors go through
memoryadmin.api_errors.exception_handler, and these bodies are what clients already read.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from memoryadmin.audit import Actor
from reviews.models import Decision, PushState, ReviewSettings
from reviews.services.decisions import proposal_approve, proposal_reject
from tests.reviews.test_workflow import ATTEMPT, SECRET, SQLITE, proposal


def error(response) -> tuple[int, dict]:  # type: ignore[no-untyped-def]
    return response.status_code, response.json()["error"]


@pytest.fixture
def writer(token_client, team):  # type: ignore[no-untyped-def]
    return token_client(team, ["reviews:read", "reviews:write"])


def test_it_answers_each_refused_decision_with_its_code_and_the_field_that_says_why(
    writer, repository
):
    secret, attempt = proposal(repository, SECRET), proposal(repository, ATTEMPT)
    url = "/api/reviews/proposals/{}/{}/"
    assert error(writer.post(url.format(secret.ref, "approve"), {}, format="json")) == (
        400,
        {
            "code": "secret-override-required",
            "message": f"{secret.ref} may contain a secret; approving needs an override with a"
            " reason.",
            "details": {
                "override_reason": [
                    f"{secret.ref} may contain a secret; approving needs an override with a reason."
                ]
            },
        },
    )
    assert error(writer.post(url.format(secret.ref, "reject"), {}, format="json")) == (
        400,
        {
            "code": "invalid",
            "message": "Say why the proposal is rejected.",
            "details": {"comment": ["Say why the proposal is rejected."]},
        },
    )
    assert writer.post(url.format(attempt.ref, "approve"), {}, format="json").status_code == 202
    not_open = {
        "code": "proposal-not-open",
        "message": f"{attempt.ref} is not waiting for review any more.",
        "details": {"proposals": [f"{attempt.ref} is not waiting for review any more."]},
    }
    assert error(
        writer.post(url.format(attempt.ref, "reject"), {"comment": "no"}, format="json")
    ) == (
        409,
        not_open,
    )
    batch = {"action": "reject", "proposals": [attempt.ref], "comment": "no"}
    assert error(writer.post("/api/reviews/batch/", batch, format="json")) == (409, not_open)


def test_it_answers_a_team_token_and_a_second_approval_by_the_same_person_as_refusals(
    writer, team, repository, reviewer_user
):
    ReviewSettings.objects.update_or_create(team=team, defaults={"require_two_approvals": True})
    memory = proposal(repository, SQLITE)
    url = f"/api/reviews/proposals/{memory.ref}/approve/"
    message = (
        "This proposal needs the approvals of two people; a team token (or the system) is not"
        " a person. Approve in the browser or with a personal token."
    )
    assert error(writer.post(url, {}, format="json")) == (
        403,
        {
            "code": "human-approval-required",
            "message": message,
            "details": {"proposals": [message]},
        },
    )
    person = APIClient()
    person.force_login(reviewer_user)
    assert person.post(f"{url}?team={team.slug}", {}, format="json").status_code == 202
    twice = (
        f"You already approved {memory.ref}; the second approval must come from a different"
        " reviewer."
    )
    assert error(person.post(f"{url}?team={team.slug}", {}, format="json")) == (
        409,
        {"code": "already-approved", "message": twice, "details": {"proposals": [twice]}},
    )


def test_it_answers_a_refused_reveal_under_the_reason_field(writer, repository):
    secret, attempt = proposal(repository, SECRET), proposal(repository, ATTEMPT)
    say_why = "Say why you need to see the masked text (it is audited)."
    assert error(
        writer.post(f"/api/reviews/proposals/{secret.ref}/reveal/", {}, format="json")
    ) == (
        400,
        {"code": "reason-required", "message": say_why, "details": {"reason": [say_why]}},
    )
    nothing = f"{attempt.ref} has nothing masked to reveal."
    response = writer.post(
        f"/api/reviews/proposals/{attempt.ref}/reveal/", {"reason": "x"}, format="json"
    )
    assert error(response) == (
        409,
        {"code": "nothing-masked", "message": nothing, "details": {"reason": [nothing]}},
    )
    response = writer.post(
        f"/api/reviews/proposals/{secret.ref}/reveal/", {"reason": "x" * 2001}, format="json"
    )
    status, body = error(response)
    assert (status, body["code"], body["message"]) == (400, "invalid", "Invalid request body.")
    assert list(body["details"]) == ["reason"]


def test_it_answers_a_retry_that_cannot_help_with_409_and_no_details(
    writer, repository, reviewer_user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_reject(
            actor=Actor(user=reviewer_user), memory=proposal(repository, ATTEMPT), comment="no"
        )
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED, decision.state_detail
    status, body = error(writer.post(f"/api/reviews/decisions/{decision.pk}/retry/", format="json"))
    assert (status, body["code"], body["details"]) == (409, "decision-not-retryable", None)
    assert "already pushed" in body["message"]
    Decision.objects.filter(pk=decision.pk).update(state=PushState.FAILED)
    repository.push_enabled = False
    repository.save(update_fields=["push_enabled"])
    assert error(writer.post(f"/api/reviews/decisions/{decision.pk}/retry/", format="json")) == (
        409,
        {
            "code": "push-disabled",
            "message": f"Pushing is disabled for app; nothing would push decision #{decision.pk}.",
            "details": None,
        },
    )
    assert error(writer.post("/api/reviews/decisions/999999/retry/", format="json")) == (
        404,
        {"code": "not-found", "message": "No decision 999999 in this team.", "details": None},
    )


def test_it_answers_a_lift_of_what_is_no_landed_rejection_with_409_and_an_unknown_ref_with_400(
    writer, repository, reviewer_user, django_capture_on_commit_callbacks
):
    actor = Actor(user=reviewer_user)
    pending = proposal_reject(actor=actor, memory=proposal(repository, SQLITE), comment="no")
    url = "/api/reviews/decisions/{}/allow-reproposal/"
    assert error(writer.post(url.format(pending.pk), {}, format="json")) == (
        409,
        {
            "code": "rejection-not-pushed",
            "message": f"Decision #{pending.pk} is pending: the rejection has not landed, so the"
            " proposal is still in the repository and nothing keeps it out.",
            "details": None,
        },
    )
    approval = proposal_approve(actor=actor, memory=proposal(repository, ATTEMPT))
    assert error(writer.post(url.format(approval.pk), {}, format="json")) == (
        409,
        {
            "code": "decision-not-rejection",
            "message": f"Decision #{approval.pk} is an approval; only a rejection keeps a text"
            " from being proposed again.",
            "details": None,
        },
    )
    Decision.objects.filter(pk=pending.pk).update(state=PushState.PUSHED)
    unknown = f"Decision #{pending.pk} did not reject ZZZ-0000."
    response = writer.post(url.format(pending.pk), {"refs": ["ZZZ-0000"]}, format="json")
    assert error(response) == (
        400,
        {"code": "ref-unknown", "message": unknown, "details": {"refs": [unknown]}},
    )


def test_it_answers_get_on_a_post_only_route_with_405_in_the_error_shape(writer, repository):
    memory = proposal(repository, ATTEMPT)
    for url in (
        f"/api/reviews/proposals/{memory.ref}/approve/",
        f"/api/reviews/proposals/{memory.ref}/reveal/",
        "/api/reviews/batch/",
        "/api/reviews/decisions/1/retry/",
        "/api/reviews/decisions/1/allow-reproposal/",
    ):
        assert error(writer.get(url)) == (
            405,
            {
                "code": "method-not-allowed",
                "message": "GET is not allowed here; use POST.",
                "details": {"allowed": ["POST"]},
            },
        ), url
