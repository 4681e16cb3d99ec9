"""The Brain page: counts, recent imports/exports, export download, upload, chunk list."""

from __future__ import annotations

import shutil

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.views.decorators.http import require_GET, require_POST

from bundles import selectors
from bundles.embeddings.lifecycle import embedding_status
from bundles.filters import ChunkFilterSet
from bundles.imports import (
    ImportOptions,
    ProposeTargetError,
    bundle_import,
    import_failure_record,
    import_job_create,
    job_progress,
    parse_bundle,
    propose_target,
)
from bundles.models import ImportJob, ImportRun
from bundles.services.exports import ExportRequest, bundle_export_json
from bundles.uploads import new_scratch_file
from formats import memoryai as protocol
from memoryadmin.audit import Actor
from memoryadmin.listing import listing, wants_csv
from memoryadmin.models import AuditEvent, Team
from memoryadmin.permissions import Action, user_can
from memoryadmin.templatetags.memoryadmin_format import counted
from memoryadmin.web import team_view

RECENT_RUNS = 10  # the imports the Brain page lists with their undo links


@require_GET
@team_view(Action.VIEW)
def brain(request: HttpRequest) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    if wants_csv(request):
        chunks = listing(request, ChunkFilterSet, selectors.chunk_rows(team), team=team)
        if not chunks.invalid:
            return chunks.csv()
    # The embedding progress counts the live chunks; unfiltered, the pager shows that count.
    embeddings = embedding_status(team)
    chunks = listing(
        request,
        ChunkFilterSet,
        selectors.chunk_rows(team),
        per_page=25,
        team=team,
        unfiltered_count=embeddings["total"],
    )
    runs = selectors.recent_runs(team, limit=RECENT_RUNS)
    events = _mark_unrecorded_imports(team, list(selectors.recent_bundle_events(team)), runs)
    return render(
        request,
        "bundles/brain.html",
        {
            "summary": selectors.brain_summary(team),
            "embeddings": embeddings,
            "events": events,
            "jobs": selectors.recent_jobs(team),
            "runs": runs,
            "page": selectors.chunk_page_masked(chunks.page),
            "listing": chunks,
            "can_import": user_can(request.user, team, Action.MANAGE),
            "scopes": protocol.SCOPES,
            "repositories": selectors.proposal_targets(team),
        },
        status=chunks.status,
    )


def _mark_unrecorded_imports(
    team: Team, events: list[AuditEvent], runs: list[ImportRun]
) -> list[AuditEvent]:
    """Mark the imports made before imports were recorded (ImportRun): nothing says what they
    inserted, so they cannot be undone, and the page says so where the undo link would be.
    Every import since writes its run in its own transaction, before its audit event, so an
    import older than the team's first run has none. `runs` is the newest few: when it is all
    of them its oldest is the first; otherwise one query asks."""
    imports = [e for e in events if e.action == "bundle.import"]
    if not imports:
        return events
    if len(runs) < RECENT_RUNS:
        first = runs[-1].created_at if runs else None
    else:
        first = (
            ImportRun.objects.filter(team=team)
            .order_by("created_at")
            .values_list("created_at", flat=True)
            .first()
        )
    for event in imports:
        event.unrecorded = first is None or event.created_at < first  # type: ignore[attr-defined]
    return events


@require_POST
@team_view(Action.VIEW)
def brain_export(request: HttpRequest) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    try:
        since = protocol.parse_timestamp(request.POST.get("since") or None, "since", "since")
        export_request = ExportRequest(scope=request.POST.get("scope") or "full", since=since)
    except protocol.BundleError as exc:
        messages.error(request, f"Export refused: {exc.message}")
        return redirect("brain", team_slug=team.slug)
    body = bundle_export_json(team=team, actor=Actor.from_request(request), request=export_request)
    response = StreamingHttpResponse(body, content_type="application/json")
    response["Cache-Control"] = "no-store"
    filename = f"{team.slug}-brain-{export_request.scope}.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_POST
@team_view(Action.MANAGE)
def brain_import(request: HttpRequest) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    actor = Actor.from_request(request)

    def refused(code: str, message: str) -> HttpResponse:
        """A failed import leaves `bundle.import_failed`, whatever stopped it."""
        import_failure_record(team=team, actor=actor, code=code, message=message)
        messages.error(request, message)
        return redirect("brain", team_slug=team.slug)

    too_large = (
        "This file is too large: a bundle may be at most "
        f"{filesizeformat(settings.BUNDLE_MAX_BYTES)}."
    )
    upload = request.FILES.get("file")
    if getattr(request, "upload_too_large", False):
        return refused("too-large", too_large)
    if upload is None:
        return refused("file-missing", "Choose a bundle file to upload.")
    if upload.size > settings.BUNDLE_MAX_BYTES:
        return refused("too-large", too_large)
    propose_to = None
    if request.POST.get("propose_to"):
        try:
            propose_to = propose_target(team=team, repository_id=request.POST["propose_to"])
        except ProposeTargetError as exc:
            return refused(exc.code, f"Import refused: {exc.message}")
    options = ImportOptions(
        keep_embeddings=request.POST.get("keep_embeddings", "true") == "true",
        accept_foreign_embeddings=request.POST.get("accept_foreign_embeddings") == "true",
        propose_to=propose_to,
    )
    if upload.size > settings.BUNDLE_SYNC_IMPORT_MAX_BYTES:
        handle, path = new_scratch_file()
        try:
            with handle:
                upload.seek(0)
                shutil.copyfileobj(upload, handle)
            job = import_job_create(
                team=team,
                actor=actor,
                scratch_path=path,
                size_bytes=upload.size,
                filename=upload.name or "",
                options=options,
            )
        except BaseException as exc:  # no job owns the copy: it goes
            path.unlink(missing_ok=True)
            import_failure_record(
                team=team, actor=actor, code="internal-error", message=type(exc).__name__
            )
            raise
        messages.info(request, f"The bundle is large; import #{job.pk} runs in the background.")
        return redirect("brain", team_slug=team.slug)
    try:
        bundle = parse_bundle(upload.read())
    except ValidationError as exc:
        return refused("malformed-json", _not_json(exc))
    try:
        result = bundle_import(team=team, actor=actor, bundle=bundle, options=options)
    except protocol.BundleError as exc:
        return refused(exc.code, f"The bundle was not imported: {exc} (code {exc.code})")
    except Exception as exc:  # the 500 is audited too (the import rolled back)
        import_failure_record(
            team=team, actor=actor, code="internal-error", message=f"{type(exc).__name__}: {exc}"
        )
        raise
    chunks = result["report"]["chunks"]
    proposals = result["report"].get("proposals")
    proposed = (
        f" {counted(proposals['proposed'], 'DNA chunk')} proposed for review "
        f"({proposals['skipped_secret']} held back for possible secrets)."
        if proposals
        else ""
    )
    messages.success(
        request,
        f"Imported: {counted(chunks['inserted'], 'chunk')} inserted, "
        f"{counted(chunks['skipped_duplicate'], 'duplicate')}, {chunks['skipped_invalid']} "
        f"invalid, {counted(len(result['report']['warnings']), 'warning')} "
        f"(see Recent imports).{proposed}",
    )
    return redirect("brain", team_slug=team.slug)


def _not_json(exc: ValidationError) -> str:
    """The upload's JSON error in words: where the file breaks, not the parser's message."""
    cause = exc.__cause__
    where = (
        f" It breaks off or goes wrong at line {cause.lineno}, column {cause.colno}."
        if isinstance(cause, ValueError) and hasattr(cause, "lineno")
        else ""
    )
    return (
        "This file is not a bundle: it is not valid JSON, and a MemoryAI bundle is the JSON "
        f"file an export writes.{where} Was it cut short, or is it another kind of file?"
    )


@require_GET
@team_view(Action.VIEW)
def brain_job(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(ImportJob, pk=job_id, team=request.team)  # type: ignore[attr-defined]
    if job.team_id != request.team.pk:  # type: ignore[attr-defined]
        raise Http404
    done, total = job_progress(job)
    template = "bundles/_job.html" if request.headers.get("HX-Request") else "bundles/job.html"
    return render(request, template, {"job": job, "done": done, "total": total})
