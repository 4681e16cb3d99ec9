"""A decided proposal keeps a page: the decision, its comment, commit and the text as decided."""

from __future__ import annotations

from django.urls import reverse

from memoryadmin.audit import Actor
from reviews.models import Decision, DecisionItem, Memory, PushState
from reviews.services.decisions import proposal_reject
from reviews.services.repositories import repository_sync
from reviews.templatetags.reviews_tags import error_summary_line
from tests.reviews.test_workflow import ATTEMPT, SECRET, proposal


def test_it_keeps_a_rejected_proposals_page_after_the_file_is_gone(
    client, viewer_user, reviewer_user, repository, django_capture_on_commit_callbacks, settings
):
    settings.PUBLIC_URL = "https://memory.example.com"
    memory = proposal(repository, ATTEMPT)
    body = memory.body
    with django_capture_on_commit_callbacks(execute=True):
        decision = proposal_reject(
            actor=Actor(user=reviewer_user), memory=memory, comment="Not <b>this</b> way"
        )
    decision.refresh_from_db()
    assert decision.state == PushState.PUSHED
    repository_sync(repository_id=repository.pk)  # the file is gone: so is the memory row
    assert not Memory.objects.filter(pk=memory.pk).exists()
    item = DecisionItem.objects.get(decision=decision)
    assert (item.memory_pk, item.type, item.body) == (memory.pk, "attempt", body)

    client.force_login(viewer_user)
    # The proposal's old URL leads to the decision, at the proposal's section.
    response = client.get(reverse("proposal-detail", args=["alpha", memory.pk]))
    page = reverse("decision-detail", args=["alpha", decision.pk])
    assert response.status_code == 302 and response["Location"] == f"{page}#item-{memory.ref}"
    html = client.get(page).content.decode()
    assert "Rejected" in html and "Not &lt;b&gt;this&lt;/b&gt; way" in html
    assert decision.commit_sha in html and f'id="item-{memory.ref}"' in html
    assert "Text at decision time" in html and "Why it matters." in html
    assert "no longer in the repository index" in html
    history = client.get(reverse("review-history", args=["alpha"])).content.decode()
    assert f'href="{page}#item-{memory.ref}"' in history


def test_it_keeps_the_decided_text_masked(client, viewer_user, reviewer_user, repository):
    memory = proposal(repository, SECRET)
    decision = proposal_reject(actor=Actor(user=reviewer_user), memory=memory, comment="leak")
    item = decision.items.get()
    assert "secret masked" in item.body
    client.force_login(viewer_user)
    html = client.get(reverse("decision-detail", args=["alpha", decision.pk])).content.decode()
    assert "secret masked" in html


def test_it_hides_a_decision_from_another_team(
    client, make_user, other_team, reviewer_user, repository
):
    from memoryadmin.models import Role

    decision = proposal_reject(
        actor=Actor(user=reviewer_user), memory=proposal(repository, ATTEMPT), comment="no"
    )
    client.force_login(make_user("olga", team=other_team, role=Role.ADMIN))
    assert client.get(reverse("decision-detail", args=["alpha", decision.pk])).status_code == 404
    assert client.get(reverse("decision-detail", args=["beta", decision.pk])).status_code == 404


GIT_REJECTED = """To /srv/remote.git
 ! [rejected]        main -> main (fetch first)
error: failed to push some refs to '/srv/remote.git'
hint: Updates were rejected because the remote contains work that you do not
hint: have locally."""


def test_it_summarises_git_text_with_the_full_text_behind_a_toggle(
    client, viewer_user, reviewer_user, repository
):
    assert error_summary_line(GIT_REJECTED) == "failed to push some refs to '/srv/remote.git'"
    assert error_summary_line("fatal: repository not found") == "repository not found"
    assert error_summary_line("the remote kept moving") == "the remote kept moving"
    decision = proposal_reject(
        actor=Actor(user=reviewer_user), memory=proposal(repository, ATTEMPT), comment="no"
    )
    Decision.objects.filter(pk=decision.pk).update(
        state=PushState.FAILED, state_detail=GIT_REJECTED
    )
    client.force_login(viewer_user)
    for url in (
        reverse("review-history", args=["alpha"]),
        reverse("decision-detail", args=["alpha", decision.pk]),
    ):
        html = client.get(url).content.decode()
        summary = html.split('class="git-summary">')[1].split("</small>")[0]
        assert summary == "failed to push some refs to &#x27;/srv/remote.git&#x27;"
        assert "<details" in html and "hint: have locally." in html
