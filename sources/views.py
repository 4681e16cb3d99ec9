"""HTML pages for sources: list, add (then preview), approve, disable, refresh, change the
credential, delete, source page."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from bundles import selectors as brain_selectors
from memoryadmin.audit import Actor
from memoryadmin.listing import listing, wants_csv
from memoryadmin.permissions import Action, user_can
from memoryadmin.web import form_add_errors, team_view
from sources import selectors
from sources.filters import RecordFilterSet, SourceFilterSet
from sources.forms import SourceAddForm, SourceCredentialForm, SourceEditForm
from sources.models import CredentialKind, Health, RefreshRun, Source, SourceKind, SourceState
from sources.services import edit, lifecycle

PAGE_SIZE = 50
RUNS_SHOWN = 20  # the refresh history on a source page


@team_view(Action.VIEW)
def source_list(request: HttpRequest) -> HttpResponse:
    result = listing(
        request, SourceFilterSet, selectors.team_sources(request.team), team=request.team
    )
    if wants_csv(request) and not result.invalid:
        return result.csv()
    return render(
        request,
        "sources/source_list.html",
        {
            "listing": result,
            "sources": result.page,
            "can_manage": user_can(request.user, request.team, Action.MANAGE),
        },
        status=result.status,
    )


@team_view(Action.MANAGE)
def source_add(request: HttpRequest) -> HttpResponse:
    form = SourceAddForm(request.POST or None)
    if request.method == "POST" and form.is_valid() and "test" in request.POST:
        _location_test(request, form)
    elif request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        credential = form.credential()
        try:
            source = lifecycle.source_add(
                actor=Actor.from_request(request),
                team=request.team,
                location=data["location"],
                credential=credential,
                refresh_interval=timedelta(minutes=data["refresh_minutes"]),
            )
        except ValidationError as exc:
            form_add_errors(form, exc)
        else:
            messages.success(
                request, "Source added. Check the preview below, then approve it to use it."
            )
            return redirect("source-detail", team_slug=request.team.slug, source_id=source.pk)
    response = render(request, "sources/source_add.html", {"form": form})
    response["Cache-Control"] = "no-store"
    return response


def _location_test(request: HttpRequest, form: SourceAddForm) -> None:
    """The "Test" button: read the manifest through the refresh's guards; nothing is saved."""
    try:
        manifest = edit.source_test(
            actor=Actor.from_request(request),
            team=request.team,
            location=form.cleaned_data["location"],
            credential=form.credential(),
        )
    except ValidationError as exc:
        form_add_errors(form, exc)
    else:
        count = len(manifest.entries)
        messages.success(
            request,
            f"Test passed: the manifest lists {count} record{'s' if count != 1 else ''}"
            f"{f' ({len(manifest.rejected)} rejected)' if manifest.rejected else ''}. "
            "Nothing was saved.",
        )


@team_view(Action.MANAGE)
def source_edit(request: HttpRequest, source_id: int) -> HttpResponse:
    source = selectors.team_source(request.team, source_id)
    initial = {
        "name": source.name_override,
        "refresh_minutes": int(source.refresh_interval.total_seconds() // 60),
    }
    form = SourceEditForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            edit.source_update(
                actor=Actor.from_request(request),
                source=source,
                name=form.cleaned_data["name"],
                refresh_interval=timedelta(minutes=form.cleaned_data["refresh_minutes"]),
            )
        except ValidationError as exc:
            form_add_errors(form, exc)
        else:
            messages.success(request, "Source saved.")
            return redirect("source-detail", team_slug=request.team.slug, source_id=source.pk)
    status = 400 if form.errors else 200
    return render(
        request, "sources/source_edit.html", {"source": source, "form": form}, status=status
    )


@team_view(Action.VIEW)
def source_detail(request: HttpRequest, source_id: int) -> HttpResponse:
    return _detail_page(request, selectors.team_source(request.team, source_id), csv=True)


def _detail_page(
    request: HttpRequest,
    source: Source,
    *,
    credential_form: SourceCredentialForm | None = None,
    status: int = 200,
    csv: bool = False,
) -> HttpResponse:
    now = timezone.now()
    denied = source.health == Health.DENIED
    snapshot = source.current_snapshot
    active_page = inactive = rejections = problems = records = None
    if snapshot is not None and not denied:
        records = listing(
            request,
            RecordFilterSet,
            selectors.active_records(source, now),
            per_page=PAGE_SIZE,
            team=request.team,
            unfiltered_count=selectors.active_count(source),
        )
        if csv and wants_csv(request) and not records.invalid:
            return records.csv()
        active_page = records.page
        status = max(status, records.status)
        inactive = [
            (record, record.reason_now(now))
            for record in selectors.inactive_records(source, now)[:200]
        ]
    if snapshot is not None:
        rejections = list(snapshot.rejections.all()[:500])
        problems = list(snapshot.problems.all())
    runs = list(source.runs.all()[:RUNS_SHOWN])
    can_manage = user_can(request.user, request.team, Action.MANAGE)
    if credential_form is None and can_manage and source.kind == SourceKind.HTTPS:
        credential_form = SourceCredentialForm(initial={"credential_kind": source.credential_kind})
    return render(
        request,
        "sources/source_detail.html",
        {
            "source": source,
            "snapshot": snapshot,
            "denied": denied,
            "page": active_page,
            "listing": records,
            "inactive": inactive,
            "rejections": rejections,
            "problems": problems,
            "runs": runs,
            "run": runs[0] if runs else None,
            "first_success": selectors.first_success(source, runs, limit=RUNS_SHOWN),
            "can_manage": can_manage,
            "credential_form": credential_form,
            "now": now,
        },
        status=status,
    )


@require_POST
@team_view(Action.MANAGE)
def source_approve(request: HttpRequest, source_id: int) -> HttpResponse:
    source = selectors.team_source(request.team, source_id)
    lifecycle.source_approve(actor=Actor.from_request(request), source=source)
    if source.health == Health.FAILED:
        messages.warning(
            request,
            f"Approved {source.label}, but it has never been read successfully: it serves "
            "nothing until a refresh succeeds. A refresh has been queued.",
        )
    else:
        messages.success(request, f"Approved {source.label}; a refresh has been queued.")
    return redirect("source-detail", team_slug=request.team.slug, source_id=source.pk)


@require_http_methods(["GET", "POST"])
@team_view(Action.MANAGE)
def source_disable(request: HttpRequest, source_id: int) -> HttpResponse:
    """GET: what disabling does, with a confirm button. POST: disable."""
    source = selectors.team_source(request.team, source_id)
    if request.method == "GET":
        chunks = brain_selectors.source_chunk_count(source)
        return render(request, "sources/source_disable.html", {"source": source, "chunks": chunks})
    lifecycle.source_disable(actor=Actor.from_request(request), source=source)
    messages.success(request, f"Disabled {source.label}; its records are no longer served.")
    return redirect("source-detail", team_slug=request.team.slug, source_id=source.pk)


@require_http_methods(["GET", "POST"])
@team_view(Action.MANAGE)
def source_credential_clear(request: HttpRequest, source_id: int) -> HttpResponse:
    """GET: what clearing the credential does, with a confirm button. POST: clear it."""
    source = selectors.team_source(request.team, source_id)
    if request.method == "GET":
        return render(request, "sources/source_credential_clear.html", {"source": source})
    source = lifecycle.source_credential_set(
        actor=Actor.from_request(request), source=source, credential=None
    )
    messages.success(request, _credential_saved(source))
    return redirect("source-detail", team_slug=request.team.slug, source_id=source.pk)


@require_POST
@team_view(Action.MANAGE)
def source_refresh(request: HttpRequest, source_id: int) -> HttpResponse:
    source = selectors.team_source(request.team, source_id)
    if source.state == SourceState.DISABLED:
        messages.error(request, "A disabled source is not refreshed; approve it first.")
    else:
        run = lifecycle.source_refresh_request(actor=Actor.from_request(request), source=source)
        run.refresh_from_db()
        if run.error_code == "queue-unavailable":
            messages.error(request, "The task queue is unavailable; try again later.")
        else:
            messages.success(request, "Refresh queued.")
    return redirect("source-detail", team_slug=request.team.slug, source_id=source.pk)


@require_POST
@team_view(Action.MANAGE)
def source_credential(request: HttpRequest, source_id: int) -> HttpResponse:
    """Replace or clear the credential; errors are shown on the source page (400)."""
    source = selectors.team_source(request.team, source_id)
    form = SourceCredentialForm(request.POST)
    if form.is_valid() and form.cleaned_data["credential_kind"] == CredentialKind.NONE:
        # Clearing takes the confirmation step the "Clear the credential…" link leads to.
        if not source.has_credential:
            messages.info(request, "No credential is set; nothing changed.")
            return redirect("source-detail", team_slug=request.team.slug, source_id=source.pk)
        return redirect("source-credential-clear", team_slug=request.team.slug, source_id=source.pk)
    if form.is_valid():
        credential = form.credential()
        try:
            source = lifecycle.source_credential_set(
                actor=Actor.from_request(request), source=source, credential=credential
            )
        except ValidationError as exc:
            form_add_errors(form, exc)
        else:
            messages.success(request, _credential_saved(source))
            return redirect("source-detail", team_slug=request.team.slug, source_id=source.pk)
    return _detail_page(request, source, credential_form=form, status=400)


def _credential_saved(source: Source) -> str:
    if not source.has_credential:
        said = "Credential cleared: the next refresh sends none."
    else:
        kind = source.get_credential_kind_display()
        said = f"Credential saved ({kind}): the next refresh uses it."
    if source.state == SourceState.DISABLED:
        return f"{said} The source is disabled: approve it again to refresh it."
    if source.health == Health.DENIED:
        return f"{said} Access was denied until now: use Refresh now to try it at once."
    return f"{said} Use Refresh now to try it at once."


@require_http_methods(["GET", "POST"])
@team_view(Action.MANAGE)
def source_delete(request: HttpRequest, source_id: int) -> HttpResponse:
    """GET: what deleting removes, with a confirm button. POST: delete."""
    source = selectors.team_source(request.team, source_id)
    if request.method == "POST":
        label = source.label
        counts = lifecycle.source_delete(actor=Actor.from_request(request), source=source)
        messages.success(
            request,
            f"Deleted {label}: {counts['records']} records and {counts['runs']} refresh runs "
            "removed; its records are no longer served or in the brain.",
        )
        return redirect("source-list", team_slug=request.team.slug)
    return render(
        request,
        "sources/source_delete.html",
        {
            "source": source,
            "preview": {
                **selectors.source_delete_preview(source),
                "chunks": brain_selectors.source_chunk_count(source),
            },
        },
    )


@team_view(Action.VIEW)
def run_status(request: HttpRequest, source_id: int, run_id: int) -> HttpResponse:
    source = selectors.team_source(request.team, source_id)
    run = get_object_or_404(RefreshRun, pk=run_id, source=source)
    context = {
        "source": source,
        "run": run,
        "first_success": selectors.first_success(source, [run], limit=1),
    }
    response = render(request, "sources/_run_status.html", context)
    if run.is_finished and getattr(request, "htmx", False):
        response["HX-Refresh"] = "true"  # the page below the banner is now out of date
    return response
