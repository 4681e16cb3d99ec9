"""Proposal pages and their decisions: detail, reveal, decide, batch, retry, re-proposal."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from formats import memoryrail
from memoryadmin.audit import Actor
from memoryadmin.models import Team
from memoryadmin.permissions import Action, user_can
from memoryadmin.templatetags.memoryadmin_format import counted
from memoryadmin.web import team_view
from reviews import selectors
from reviews.diffs import inline_diff
from reviews.forms import BatchForm, DecisionForm, RevealForm
from reviews.models import Decision, DecisionItem, Memory
from reviews.rendering import render_markdown
from reviews.services.content import (
    MemoryText,
    memory_text,
    proposal_secret_reveal,
    stale_masked,
)
from reviews.services.decisions import proposals_blocking, proposals_review
from reviews.services.push import decision_push_retry
from reviews.services.rejections import rejection_reproposal_allow
from reviews.views.queue import queue_page, queue_params


def _errors(request: HttpRequest, exc: ValidationError) -> None:
    for message in exc.messages:
        messages.error(request, message)


@team_view(Action.VIEW)
def proposal_detail(request: HttpRequest, memory_pk: int) -> HttpResponse:
    """The proposal; once it has left the index (a rejection deletes its file), its latest
    decision's page, so links sent earlier keep working."""
    team = request.team  # type: ignore[attr-defined]
    if not Memory.objects.filter(pk=memory_pk, team=team).exists():
        item = (
            DecisionItem.objects.filter(memory_pk=memory_pk, decision__team=team)
            .order_by("-decision_id")
            .only("decision_id", "ref")
            .first()
        )
        if item is not None:
            url = reverse("decision-detail", args=[team.slug, item.decision_id])
            return redirect(f"{url}#item-{item.ref}")
    return _proposal_page(request, memory_pk)


def _proposal_page(
    request: HttpRequest,
    memory_pk: int,
    *,
    revealed: bool = False,
    reveal_form: RevealForm | None = None,
    status: int = 200,
) -> HttpResponse:
    """The proposal with its secrets masked; `revealed` shows its own text (after an audited
    reveal, in that one response only)."""
    team = request.team  # type: ignore[attr-defined]
    memory = get_object_or_404(
        selectors.with_review_state(Memory.objects.select_related("repository")),
        pk=memory_pk,
        team=team,
    )
    text = memory_text(memory)
    if not revealed:
        memory.title = text.title  # the page title, heading and decisions read it
        memory.stale = stale_masked(memory.stale)
    superseded = None
    if memory.supersedes:
        superseded = Memory.objects.filter(
            repository=memory.repository, memory_id=memory.supersedes
        ).first()
    superseded_text = memory_text(superseded) if superseded else None
    if superseded is not None and superseded_text is not None:
        superseded.title = superseded_text.title
    body = memory.body if revealed else text.body
    diff_against = _diff_against(memory, superseded, superseded_text)
    front_matter = memory.front_matter if revealed else text.front_matter
    context = {
        "memory": memory,
        "body_html": mark_safe(render_markdown(body)),  # noqa: S308 - sanitised by nh3
        "superseded": superseded,
        "superseded_html": (
            mark_safe(render_markdown(superseded_text.body))  # noqa: S308 - sanitised by nh3
            if superseded_text
            else ""
        ),
        "front_matter": [(k, memoryrail.encode_value(v)) for k, v in front_matter.items()],
        **_queue_context(request, memory),
        "diff_label": diff_against[0],
        "diff": inline_diff(diff_against[1], text.body) if diff_against[0] else None,
        **_proposal_decisions(memory),
        "can_review": user_can(request.user, team, Action.REVIEW),
        "approvals_needed": selectors.approvals_needed(
            memory.type, two_approvals=selectors.requires_two_approvals(team)
        ),
        "form": DecisionForm(),
        "masked": text.masked and not revealed,
        "revealed": revealed,
        "reveal_form": reveal_form or RevealForm(),
    }
    response = render(request, "reviews/proposal.html", context, status=status)
    if revealed:
        response["Cache-Control"] = "no-store"  # shown once: not kept by the browser or a proxy
    return response


def _queue_context(request: HttpRequest, memory: Memory) -> dict[str, object]:
    """The proposal's place in the queue it was opened from: previous/next, the filters."""
    filters = selectors.queue_filters(request.GET)
    previous, following = selectors.queue_neighbours(
        request.team,  # type: ignore[attr-defined]
        memory.pk,
        filters=filters,
        user=request.user,
    )
    query = urlencode({k: v for k, v in filters.items() if v})
    return {
        "previous_pk": previous if memory.status == "proposed" else None,
        "next_pk": following,
        "queue_filters": [(k, v) for k, v in filters.items() if v],
        "queue_query": f"?{query}" if query else "",
    }


def _diff_against(
    memory: Memory, superseded: Memory | None, superseded_text: MemoryText | None
) -> tuple[str, str]:
    """(what the proposal is compared with, its masked text): the memory it supersedes, else
    the text of its last decision when the file changed upstream since (another blob)."""
    if superseded is not None and superseded_text is not None:
        return f"Changes against {superseded.ref} {superseded.title}", superseded_text.body
    earlier = (
        DecisionItem.objects.filter(memory=memory)
        .exclude(blob_sha=memory.blob_sha)
        .exclude(body="")
        .order_by("-decision_id")
        .only("decision_id", "body")
        .first()
    )
    if earlier is None:
        return "", ""
    return f"Changed upstream since decision #{earlier.decision_id}", earlier.body


@require_POST
@team_view(Action.REVIEW)
def proposal_reveal(request: HttpRequest, memory_pk: int) -> HttpResponse:
    """Show the masked text once to a reviewer who gives a reason (audited); viewers get 403."""
    team = request.team  # type: ignore[attr-defined]
    memory = get_object_or_404(Memory, pk=memory_pk, team=team)
    form = RevealForm(request.POST)
    form.is_valid()
    try:
        proposal_secret_reveal(
            actor=Actor.from_request(request),
            memory=memory,
            reason=form.cleaned_data.get("reason", ""),
        )
    except ValidationError as exc:
        form.add_error("reason", exc.messages)
        return _proposal_page(request, memory.pk, reveal_form=form, status=400)
    return _proposal_page(request, memory.pk, revealed=True)


def _proposal_decisions(memory: Memory) -> dict[str, object]:
    """The proposal's last decisions, and whether one is still pushing (the section polls)."""
    decisions = list(Decision.objects.filter(items__memory=memory).order_by("-id")[:10])
    return {"decisions": decisions, "pushing": any(d.state == "pending" for d in decisions)}


@team_view(Action.VIEW)
def proposal_decisions(request: HttpRequest, memory_pk: int) -> HttpResponse:
    """The proposal's decisions and their push state: polled while one is pending."""
    team = request.team  # type: ignore[attr-defined]
    memory = get_object_or_404(Memory, pk=memory_pk, team=team)
    return render(
        request,
        "reviews/_proposal_decisions.html",
        {
            "memory": memory,
            **_proposal_decisions(memory),
            "can_review": user_can(request.user, team, Action.REVIEW),
        },
    )


@require_POST
@team_view(Action.REVIEW)
def decision_retry(request: HttpRequest, decision_pk: int) -> HttpResponse:
    """Queue a failed decision's push again; back to the page the button was on."""
    team = request.team  # type: ignore[attr-defined]
    decision = get_object_or_404(Decision, pk=decision_pk, team=team)
    try:
        decision_push_retry(actor=Actor.from_request(request), decision=decision)
    except ValidationError as exc:
        _errors(request, exc)
    else:
        messages.success(request, f"Pushing decision #{decision.pk} again.")
    return _back(request, team)


def _back(request: HttpRequest, team: Team) -> HttpResponse:
    """To the reviews page the button was on (`next`), else the decision history."""
    back = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    if safe and back.startswith(f"/t/{team.slug}/reviews/"):
        return redirect(back)
    return redirect("review-history", team_slug=team.slug)


@require_POST
@team_view(Action.REVIEW)
def decision_reproposal_allow(request: HttpRequest, decision_pk: int) -> HttpResponse:
    """Lift a rejection: imports may propose the rejected text (one proposal, or all) again."""
    team = request.team  # type: ignore[attr-defined]
    decision = get_object_or_404(Decision, pk=decision_pk, team=team)
    ref = request.POST.get("ref", "").strip()
    try:
        items = rejection_reproposal_allow(
            actor=Actor.from_request(request), decision=decision, refs=[ref] if ref else None
        )
    except ValidationError as exc:
        _errors(request, exc)
    else:
        refs = ", ".join(i.ref for i in items)
        messages.success(request, f"Imports may propose {refs} again; a reviewer decides it then.")
    return _back(request, team)


@require_POST
@team_view(Action.REVIEW)
def proposal_decide(request: HttpRequest, memory_pk: int, kind: str) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    memory = get_object_or_404(Memory, pk=memory_pk, team=team)
    form = DecisionForm(request.POST)
    form.is_valid()
    filters = selectors.queue_filters(request.POST)
    previous, following = selectors.queue_neighbours(
        team, memory.pk, filters=filters, user=request.user
    )
    try:
        outcome = proposals_review(
            actor=Actor.from_request(request),
            team=team,
            memory_ids=[memory.pk],
            kind=kind,
            comment=form.cleaned_data.get("comment", ""),
            override_reason=form.cleaned_data.get("override_reason", ""),
        )
    except ValidationError as exc:
        _errors(request, exc)
        return redirect("proposal-detail", team_slug=team.slug, memory_pk=memory.pk)
    if outcome.first_approvals:
        messages.success(
            request,
            f"Recorded your approval of {memory.ref} (1 of 2). A different reviewer must approve"
            " it too before it is committed.",
        )
        return redirect("proposal-detail", team_slug=team.slug, memory_pk=memory.pk)
    verb = "Approved" if kind == "approve" else "Rejected"
    messages.success(request, f"{verb} {memory.ref}. The commit is being pushed (see history).")
    # On to the next proposal of the same queue (the one before at its end), like GitHub.
    landing = following or previous
    query = urlencode({k: v for k, v in filters.items() if v})
    if landing is None:
        messages.info(request, "That was the last proposal of this queue.")
        return redirect(reverse("review-queue", args=[team.slug]) + (f"?{query}" if query else ""))
    url = reverse("proposal-detail", args=[team.slug, landing])
    return redirect(url + (f"?{query}" if query else ""))


@require_POST
@team_view(Action.REVIEW)
def review_batch(request: HttpRequest) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    form = BatchForm(request.POST)
    ids = [int(v) for v in request.POST.getlist("proposals") if v.isdigit()]
    if not form.is_valid():
        messages.error(request, "Choose approve or reject.")
        return queue_page(request, batch_form=form, selected=frozenset(ids), status=400)
    if request.POST.get("skip") == "blocked":  # "decide the others": leave what still blocks
        blocked = proposals_blocking(
            team=team,
            memory_ids=ids,
            kind=form.cleaned_data["action"],
            comment=form.cleaned_data["comment"],
            override_reason=form.cleaned_data["override_reason"],
        )
        ids = [i for i in ids if i not in blocked]
    try:
        outcome = proposals_review(
            actor=Actor.from_request(request),
            team=team,
            memory_ids=ids,
            kind=form.cleaned_data["action"],
            comment=form.cleaned_data["comment"],
            override_reason=form.cleaned_data["override_reason"],
        )
    except ValidationError as exc:
        # Nothing was decided: the page keeps the selection and the comment, and marks the
        # proposals that refuse on their own, so the reviewer can decide the others.
        _errors(request, exc)
        blocked = proposals_blocking(
            team=team,
            memory_ids=ids,
            kind=form.cleaned_data["action"],
            comment=form.cleaned_data["comment"],
            override_reason=form.cleaned_data["override_reason"],
        )
        return queue_page(
            request, batch_form=form, selected=frozenset(ids), blocked=blocked, status=400
        )
    firsts = outcome.first_approvals
    decided = len(ids) - len(firsts)
    if decided:
        commits = len(outcome.decisions)
        messages.success(
            request, f"Recorded {counted(decided, 'decision')} in {counted(commits, 'commit')}."
        )
    if firsts:
        refs = ", ".join(a.memory.ref for a in firsts)
        messages.info(
            request,
            f"First approval (1 of 2) recorded for {refs}; a different reviewer must approve"
            " them too.",
        )
    if not outcome.decisions:  # first approvals only: back to the queue as it was
        query = queue_params(request).urlencode()
        return redirect(reverse("review-queue", args=[team.slug]) + (f"?{query}" if query else ""))
    return redirect("review-history", team_slug=team.slug)
