"""Brain clean-up over the API: delete a chunk, see and undo what an import wrote."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from bundles.models import Chunk, ImportRun
from bundles.services.cleanup import chunk_user_delete, import_undo, import_undo_plan
from memoryadmin.api import HasScope, request_team
from memoryadmin.api_errors import AUTH_ERRORS, ApiError, error_responses
from memoryadmin.audit import Actor
from memoryadmin.models import Scope


def _true(value: object, name: str) -> bool:
    if value in (None, "", False, "false"):
        return False
    if value in (True, "true"):
        return True
    raise ApiError(400, "bad-request", f"{name} must be 'true' or 'false'", {"param": name})


_PLAN = inline_serializer(
    "ImportUndoPlan",
    {
        "import": serializers.IntegerField(),
        "job": serializers.IntegerField(allow_null=True),
        "undone_at": serializers.DateTimeField(allow_null=True),
        "carried": serializers.IntegerField(help_text="chunks the import carried"),
        "inserted": serializers.IntegerField(help_text="chunks it created"),
        "remove": serializers.IntegerField(help_text="created, held by nothing else"),
        "remove_dna": serializers.IntegerField(help_text="of `remove`, DNA (needs include_dna)"),
        "kept_source": serializers.IntegerField(),
        "kept_other_import": serializers.IntegerField(),
        "kept_manual": serializers.IntegerField(),
        "kept_deleted": serializers.IntegerField(),
        "held_before": serializers.IntegerField(),
    },
)
_UNDONE = inline_serializer(
    "ImportUndoReport",
    {
        "removed": serializers.IntegerField(),
        "kept_dna": serializers.IntegerField(),
        "include_dna": serializers.BooleanField(),
        "remove": serializers.IntegerField(),
        "kept_source": serializers.IntegerField(),
        "kept_other_import": serializers.IntegerField(),
    },
)


class ChunkDeleteView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"DELETE": Scope.BUNDLES_IMPORT}

    @extend_schema(
        summary="Delete a chunk (a person's delete)",
        description="Marks the chunk deleted by you: never served or exported again, and kept "
        "as a tombstone so a re-import or a mirror does not bring it back. Audited "
        "(`chunk.delete`). A DNA chunk (MemoryAI §3.7) needs `confirm_dna=true`: 400 "
        "`dna-confirmation-required` without it. 409 `chunk-already-deleted`.",
        parameters=[
            OpenApiParameter(
                "confirm_dna",
                OpenApiTypes.BOOL,
                description="`true` to delete a DNA chunk.",
            )
        ],
        request=None,
        responses={204: None, **error_responses(400, *AUTH_ERRORS, 404, 409)},
    )
    def delete(self, request: Request, chunk_id: int) -> Response:
        team = request_team(request)
        chunk = Chunk.objects.filter(team=team, pk=chunk_id).first()
        if chunk is None:
            raise ApiError(404, "not-found", f"No chunk {chunk_id} in this team.")
        confirm = _true(request.query_params.get("confirm_dna"), "confirm_dna")
        chunk_user_delete(chunk=chunk, actor=Actor.from_request(request), confirm_dna=confirm)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ImportUndoView(APIView):
    permission_classes = [HasScope]
    required_scopes = {"GET": Scope.BUNDLES_IMPORT, "POST": Scope.BUNDLES_IMPORT}

    def _run(self, request: Request, import_id: int) -> ImportRun:
        run = ImportRun.objects.filter(team=request_team(request), pk=import_id).first()
        if run is None:
            raise ApiError(404, "not-found", f"No import {import_id} in this team.")
        return run

    @extend_schema(
        summary="What undoing an import would remove and keep",
        description="Counts of chunks: what the import carried and created, what an undo "
        "removes (created and held by nothing else) and what it keeps (a source or "
        "repository serves it, another import carried it, a person entered or deleted it).",
        responses={200: _PLAN, **error_responses(*AUTH_ERRORS, 404)},
    )
    def get(self, request: Request, import_id: int) -> Response:
        run = self._run(request, import_id)
        plan = import_undo_plan(run)
        body = {"import": run.pk, "job": run.job_id, "undone_at": run.undone_at}
        return Response(body | plan.as_dict())

    @extend_schema(
        summary="Undo an import",
        description="Removes the chunks the import created that no source, repository, "
        "person or other import holds (with their edges). DNA chunks only with "
        '`{"include_dna": true}`. Audited (`bundle.import-undo`). 409 '
        "`import-already-undone`.",
        request=inline_serializer(
            "ImportUndoRequest", {"include_dna": serializers.BooleanField(required=False)}
        ),
        responses={200: _UNDONE, **error_responses(400, *AUTH_ERRORS, 404, 409)},
    )
    def post(self, request: Request, import_id: int) -> Response:
        run = self._run(request, import_id)
        data = request.data if isinstance(request.data, dict) else {}
        include = _true(data.get("include_dna"), "include_dna")
        report = import_undo(run=run, actor=Actor.from_request(request), include_dna=include)
        return Response(report)
