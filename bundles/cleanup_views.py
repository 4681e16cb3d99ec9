"""Brain clean-up pages: delete a chunk, undo an import — each behind a page that says what goes."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from bundles.models import Chunk, ChunkOrigin, ImportRun
from bundles.secrets import mask_secrets
from bundles.services.cleanup import chunk_is_dna, chunk_user_delete, import_undo, import_undo_plan
from memoryadmin.audit import Actor
from memoryadmin.permissions import Action
from memoryadmin.web import team_view


@require_http_methods(["GET", "POST"])
@team_view(Action.MANAGE)
def chunk_delete(request: HttpRequest, chunk_id: int) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    chunk = get_object_or_404(Chunk, pk=chunk_id, team=team, is_deleted=False)
    error = ""
    if request.method == "POST":
        try:
            chunk_user_delete(
                chunk=chunk,
                actor=Actor.from_request(request),
                confirm_dna=request.POST.get("confirm_dna") == "true",
            )
        except ValidationError as exc:
            error = " ".join(exc.messages)
        else:
            messages.success(request, f"Deleted chunk {chunk.pk}. It is never exported again.")
            return redirect("brain", team_slug=team.slug)
    origins = list(ChunkOrigin.objects.filter(chunk=chunk, active=True).only("kind", "metadata"))
    context = {
        "chunk": chunk,
        "display_content": mask_secrets(chunk.content, chunk.secret_findings),
        "is_dna": chunk_is_dna(chunk),
        "origins": origins,
        "error": error,
    }
    return render(request, "bundles/chunk_delete.html", context, status=400 if error else 200)


@require_http_methods(["GET", "POST"])
@team_view(Action.MANAGE)
def import_undo_view(request: HttpRequest, import_id: int) -> HttpResponse:
    team = request.team  # type: ignore[attr-defined]
    run = get_object_or_404(ImportRun.objects.select_related("job"), pk=import_id, team=team)
    if request.method == "POST":
        try:
            report = import_undo(
                run=run,
                actor=Actor.from_request(request),
                include_dna=request.POST.get("include_dna") == "true",
            )
        except ValidationError as exc:
            for message in exc.messages:
                messages.error(request, message)
        else:
            messages.success(
                request,
                f"Undid import #{run.pk}: removed {report['removed']} chunk"
                f"{'' if report['removed'] == 1 else 's'}.",
            )
        return redirect("brain", team_slug=team.slug)
    return render(request, "bundles/import_undo.html", {"run": run, "plan": import_undo_plan(run)})
