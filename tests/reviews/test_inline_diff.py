"""A superseding or upstream-changed proposal shows an inline diff, escaped, words marked."""

from __future__ import annotations

from django.urls import reverse

from reviews.diffs import inline_diff
from reviews.models import Decision, DecisionItem, PushState
from tests.reviews.test_workflow import ATTEMPT, SQLITE, proposal


def test_it_marks_changed_words_within_a_changed_line_and_escapes_everything():
    lines = inline_diff("keep\nuse <b>MySQL</b> now\ngone", "keep\nuse <b>PostgreSQL</b> now\nnew")
    assert [line.kind for line in lines] == ["same", "removed", "removed", "added", "added"]
    removed, added = lines[1].html, lines[3].html
    assert "<del>&lt;b&gt;MySQL&lt;/b&gt;</del>" in removed and "use " in removed
    assert "<ins>&lt;b&gt;PostgreSQL&lt;/b&gt;</ins>" in added
    assert (lines[2].html, lines[4].html) == ("<del>gone</del>", "<ins>new</ins>")  # rewritten
    assert (lines[3].old_number, lines[3].new_number) == (None, 2)
    assert inline_diff("same", "same") is None


def test_it_shows_the_diff_against_the_superseded_memory(client, viewer_user, repository):
    client.force_login(viewer_user)
    memory = proposal(repository, SQLITE)  # supersedes the PostgreSQL decision
    html = client.get(reverse("proposal-detail", args=["alpha", memory.pk])).content.decode()
    section = html.split('id="inline-diff"')[1].split("</section>")[0]
    assert "Changes against" in section and "<ins>" in section and "<script" not in section


def test_it_shows_what_changed_upstream_since_the_last_decision(
    client, viewer_user, reviewer_user, repository
):
    memory = proposal(repository, ATTEMPT)
    decision = Decision.objects.create(
        team=repository.team,
        repository=repository,
        kind="approve",
        actor_label="user:rita",
        author_name="Rita",
        author_email="rita@example.org",
        state=PushState.CONFLICT,
        state_detail="the proposal changed upstream",
    )
    DecisionItem.objects.create(
        decision=decision,
        memory=memory,
        memory_key=memory.memory_id,
        ref=memory.ref,
        title=memory.title,
        path=memory.path,
        blob_sha="1" * 40,  # what the reviewer saw: not today's file
        body="The old text the reviewer saw.\n",
    )
    client.force_login(viewer_user)
    html = client.get(reverse("proposal-detail", args=["alpha", memory.pk])).content.decode()
    section = html.split('id="inline-diff"')[1].split("</section>")[0]
    assert f"Changed upstream since decision #{decision.pk}" in section
    assert "The old text the reviewer saw." in section and "diff-removed" in section
