"""Repository pages: list, add, detail, routing, sync. Thin: parse, call, render."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from formats import memoryrail
from formats.memoryrail import reviewer_rules as routing
from formats.memoryrail.secrets import secrets_masked
from memoryadmin.audit import Actor
from memoryadmin.permissions import Action, user_can
from memoryadmin.web import form_add_errors, team_view
from reviews.forms import RepositoryForm, RoutingForm
from reviews.models import Memory, Repository, SyncState
from reviews.services.content import problems_masked
from reviews.services.repositories import repository_create, repository_sync_request
from reviews.services.routing import repository_routing_update
from reviews.views.repository_admin import form_test


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
    if request.method == "POST" and form.is_valid() and "test" in request.POST:
        form_test(request, form)
    elif request.method == "POST" and form.is_valid():
        try:
            repository = repository_create(
                actor=Actor.from_request(request), team=team, **form.cleaned_data
            )
        except ValidationError as exc:
            form_add_errors(form, exc)
        else:
            messages.success(request, f"Added {repository.name}; the first sync is running.")
            return redirect("repository-detail", team_slug=team.slug, repository_pk=repository.pk)
    response = render(
        request, "reviews/repository_add.html", {"form": form}, status=400 if form.errors else 200
    )
    response["Cache-Control"] = "no-store"
    return response


@team_view(Action.VIEW)
def repository_detail(request: HttpRequest, repository_pk: int) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    repository = get_object_or_404(Repository, pk=repository_pk, team=team)
    return _repository_page(request, repository, RoutingForm(initial=_routing_initial(repository)))


def _routing_initial(repository: Repository) -> dict[str, str]:
    rules = routing.rules_from_json(repository.routing_rules)
    return {"rules": routing.render_rules(rules)}


def _repository_page(
    request: HttpRequest, repository: Repository, routing_form: RoutingForm, status: int = 200
) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    repository.problems = problems_masked(repository.problems)
    repository.last_error = secrets_masked(repository.last_error)
    context = {
        "repository": repository,
        "counts": {
            status: Memory.objects.filter(repository=repository, status=status).count()
            for status in memoryrail.STATUSES
        },
        "can_manage": user_can(request.user, team, Action.MANAGE),
        "routing_rules": routing.rules_from_json(repository.routing_rules),
        "routing_form": routing_form,
    }
    return render(request, "reviews/repository_detail.html", context, status=status)


@require_POST
@team_view(Action.MANAGE)
def repository_routing(request: HttpRequest, repository_pk: int) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    repository = get_object_or_404(Repository, pk=repository_pk, team=team)
    form = RoutingForm(request.POST)
    if form.is_valid():
        try:
            repository_routing_update(
                actor=Actor.from_request(request),
                repository=repository,
                text=form.cleaned_data["rules"],
            )
        except ValidationError as exc:
            for message in exc.message_dict.get("rules", exc.messages):
                form.add_error("rules", message)
        else:
            messages.success(request, "Reviewer routing saved; open proposals were reassigned.")
            return redirect("repository-detail", team_slug=team.slug, repository_pk=repository.pk)
    return _repository_page(request, repository, form, status=400)


@team_view(Action.VIEW)
def repository_sync_status(request: HttpRequest, repository_pk: int) -> HttpResponse:
    """The sync progress fragment, polled by htmx while a sync is queued or running."""
    team = request.team  # type: ignore[attr-defined]
    repository = get_object_or_404(Repository, pk=repository_pk, team=team)
    response = render(request, "reviews/_sync_status.html", {"repository": repository})
    if repository.sync_state == SyncState.IDLE and request.GET.get("was") == "busy":
        response["HX-Refresh"] = "true"  # counts and problems below are now out of date
    return response


@require_POST
@team_view(Action.MANAGE)
def repository_sync(request: HttpRequest, repository_pk: int) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    repository = get_object_or_404(Repository, pk=repository_pk, team=team)
    try:
        repository_sync_request(actor=Actor.from_request(request), repository=repository)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Sync of {repository.name} requested.")
    return redirect("repository-detail", team_slug=team.slug, repository_pk=repository.pk)
