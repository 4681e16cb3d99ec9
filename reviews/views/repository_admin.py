"""Repository pages after adding: edit (with Test), disable or enable, delete. Thin."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from bundles.selectors import repository_chunk_count
from memoryadmin.audit import Actor
from memoryadmin.permissions import Action
from memoryadmin.web import form_add_errors, team_view
from reviews.forms import RepositoryEditForm, RepositoryForm
from reviews.models import Repository
from reviews.services import repository_admin as admin


def _repository(request: HttpRequest, repository_pk: int) -> Repository:
    return get_object_or_404(Repository, pk=repository_pk, team=request.team)  # type: ignore[attr-defined]


def _to_detail(request: HttpRequest, repository: Repository) -> HttpResponse:
    return redirect(
        "repository-detail",
        team_slug=request.team.slug,  # type: ignore[attr-defined]
        repository_pk=repository.pk,
    )


def form_test(
    request: HttpRequest, form: RepositoryForm, repository: Repository | None = None
) -> None:
    """The "Test" button: ls-remote through the guard; the answer goes on the page, nothing
    is saved."""
    data = form.cleaned_data
    try:
        head = admin.repository_test(
            remote_url=data["remote_url"],
            branch=data["branch"],
            credential_kind=data["credential_kind"],
            credential_username=data["credential_username"],
            credential_secret=data["credential_secret"],
            ssh_known_hosts=data["ssh_known_hosts"],
            repository=repository,
        )
    except ValidationError as exc:
        form_add_errors(form, exc)
    else:
        messages.success(
            request, f"Test passed: branch {data['branch']} is at {head[:12]}. Nothing was saved."
        )


@team_view(Action.MANAGE)
def repository_edit(request: HttpRequest, repository_pk: int) -> HttpResponse:
    repository = _repository(request, repository_pk)
    initial = {
        name: getattr(repository, name)
        for name in ("name", "remote_url", "branch", "credential_kind", "credential_username")
    }
    initial["push_enabled"] = repository.push_enabled
    form = RepositoryEditForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        if "test" in request.POST:
            form_test(request, form, repository)
        else:
            try:
                admin.repository_update(
                    actor=Actor.from_request(request), repository=repository, **form.cleaned_data
                )
            except ValidationError as exc:
                form_add_errors(form, exc)
            else:
                messages.success(request, f"Saved {form.cleaned_data['name'].strip()}.")
                return _to_detail(request, repository)
    response = render(
        request,
        "reviews/repository_edit.html",
        {"form": form, "repository": repository},
        status=400 if form.errors else 200,
    )
    response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
@team_view(Action.MANAGE)
def repository_disable(request: HttpRequest, repository_pk: int) -> HttpResponse:
    """GET: what disabling does, with a confirm button. POST: disable."""
    repository = _repository(request, repository_pk)
    if request.method == "POST":
        admin.repository_set_enabled(
            actor=Actor.from_request(request), repository=repository, enabled=False
        )
        messages.success(request, f"Disabled {repository.name}: it is no longer synced or pushed.")
        return _to_detail(request, repository)
    return render(request, "reviews/repository_disable.html", {"repository": repository})


@require_POST
@team_view(Action.MANAGE)
def repository_enable(request: HttpRequest, repository_pk: int) -> HttpResponse:
    repository = _repository(request, repository_pk)
    admin.repository_set_enabled(
        actor=Actor.from_request(request), repository=repository, enabled=True
    )
    messages.success(request, f"Enabled {repository.name}; a sync has been queued.")
    return _to_detail(request, repository)


@require_http_methods(["GET", "POST"])
@team_view(Action.MANAGE)
def repository_delete(request: HttpRequest, repository_pk: int) -> HttpResponse:
    """GET: what deleting removes, with a confirm button. POST: delete."""
    repository = _repository(request, repository_pk)
    if request.method == "POST":
        name = repository.name
        counts = admin.repository_delete(actor=Actor.from_request(request), repository=repository)
        messages.success(
            request,
            f"Deleted {name}: {counts['memories']} indexed memories and "
            f"{counts['decisions']} decisions removed; what it served left the brain.",
        )
        return redirect("repository-list", team_slug=request.team.slug)  # type: ignore[attr-defined]
    preview = {
        **admin.repository_delete_preview(repository),
        "chunks": repository_chunk_count(repository),
    }
    return render(
        request, "reviews/repository_delete.html", {"repository": repository, "preview": preview}
    )
