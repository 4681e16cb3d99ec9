"""Review pages: queue, proposal, decisions, history, repositories. Thin: parse, call, render."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from memoryadmin.audit import Actor
from memoryadmin.permissions import Action, user_can
from memoryadmin.web import team_view
from reviews import memoryrail, selectors, services
from reviews.forms import BatchForm, DecisionForm, RepositoryForm
from reviews.models import Decision, Memory, Repository
from reviews.rendering import render_markdown

PAGE_SIZE = 50


def _errors(request: HttpRequest, exc: ValidationError) -> None:
    for message in exc.messages:
        messages.error(request, message)


@team_view(Action.VIEW)
def review_queue(request: HttpRequest) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    filters = {k: request.GET.get(k, "") for k in ("repository", "type", "flag")}
    if not filters["repository"].isdigit():
        filters["repository"] = ""
    page = Paginator(selectors.review_queue(team, filters=filters), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    repositories = list(Repository.objects.filter(team=team).only("id", "name", "last_sync_ok"))
    context = {
        "page": page,
        "filters": filters,
        "repositories": repositories,
        "broken": [r for r in repositories if r.last_sync_ok is False],
        "types": list(memoryrail.TYPE_PREFIXES),
        "can_review": user_can(request.user, team, Action.REVIEW),
        "batch_form": BatchForm(),
    }
    return render(request, "reviews/queue.html", context)


@team_view(Action.VIEW)
def proposal_detail(request: HttpRequest, memory_pk: int) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    memory = get_object_or_404(Memory.objects.select_related("repository"), pk=memory_pk, team=team)
    superseded = None
    if memory.supersedes:
        superseded = Memory.objects.filter(
            repository=memory.repository, memory_id=memory.supersedes
        ).first()
    context = {
        "memory": memory,
        "body_html": mark_safe(render_markdown(memory.body)),  # noqa: S308 - sanitised by nh3
        "superseded": superseded,
        "superseded_html": mark_safe(render_markdown(superseded.body)) if superseded else "",  # noqa: S308
        "front_matter": [(k, memoryrail.encode_value(v)) for k, v in memory.front_matter.items()],
        "decisions": Decision.objects.filter(items__memory=memory).order_by("-id")[:10],
        "can_review": user_can(request.user, team, Action.REVIEW),
        "form": DecisionForm(),
    }
    return render(request, "reviews/proposal.html", context)


@require_POST
@team_view(Action.REVIEW)
def proposal_decide(request: HttpRequest, memory_pk: int, kind: str) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    memory = get_object_or_404(Memory, pk=memory_pk, team=team)
    form = DecisionForm(request.POST)
    form.is_valid()
    try:
        services.proposals_decide(
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
    verb = "Approved" if kind == "approve" else "Rejected"
    messages.success(request, f"{verb} {memory.ref}. The commit is being pushed.")
    return redirect("review-history", team_slug=team.slug)


@require_POST
@team_view(Action.REVIEW)
def review_batch(request: HttpRequest) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    form = BatchForm(request.POST)
    ids = [int(v) for v in request.POST.getlist("proposals") if v.isdigit()]
    if not form.is_valid():
        messages.error(request, "Choose approve or reject.")
        return redirect("review-queue", team_slug=team.slug)
    try:
        decisions = services.proposals_decide(
            actor=Actor.from_request(request),
            team=team,
            memory_ids=ids,
            kind=form.cleaned_data["action"],
            comment=form.cleaned_data["comment"],
            override_reason=form.cleaned_data["override_reason"],
        )
    except ValidationError as exc:
        _errors(request, exc)
        return redirect("review-queue", team_slug=team.slug)
    messages.success(request, f"Recorded {len(ids)} decisions in {len(decisions)} commit(s).")
    return redirect("review-history", team_slug=team.slug)


@team_view(Action.VIEW)
def review_history(request: HttpRequest) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    page = Paginator(selectors.decision_history(team), PAGE_SIZE).get_page(request.GET.get("page"))
    polling = any(d.state == "pending" for d in page)
    template = "reviews/_history_rows.html" if request.htmx else "reviews/history.html"  # type: ignore[attr-defined]
    return render(request, template, {"page": page, "polling": polling})


@team_view(Action.VIEW)
def repository_list(request: HttpRequest) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    return render(
        request,
        "reviews/repository_list.html",
        {
            "repositories": Repository.objects.filter(team=team),
            "can_manage": user_can(request.user, team, Action.MANAGE),
        },
    )


@team_view(Action.MANAGE)
def repository_add(request: HttpRequest) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    form = RepositoryForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            repository = services.repository_create(
                actor=Actor.from_request(request), team=team, **form.cleaned_data
            )
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            messages.success(request, f"Added {repository.name}; the first sync is running.")
            return redirect("repository-detail", team_slug=team.slug, repository_pk=repository.pk)
    response = render(request, "reviews/repository_add.html", {"form": form})
    response["Cache-Control"] = "no-store"
    return response


@team_view(Action.VIEW)
def repository_detail(request: HttpRequest, repository_pk: int) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    repository = get_object_or_404(Repository, pk=repository_pk, team=team)
    context = {
        "repository": repository,
        "counts": {
            status: Memory.objects.filter(repository=repository, status=status).count()
            for status in memoryrail.STATUSES
        },
        "can_manage": user_can(request.user, team, Action.MANAGE),
    }
    return render(request, "reviews/repository_detail.html", context)


@require_POST
@team_view(Action.MANAGE)
def repository_sync(request: HttpRequest, repository_pk: int) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    repository = get_object_or_404(Repository, pk=repository_pk, team=team)
    services.repository_sync_request(actor=Actor.from_request(request), repository=repository)
    messages.success(request, f"Sync of {repository.name} requested.")
    return redirect("repository-detail", team_slug=team.slug, repository_pk=repository.pk)
