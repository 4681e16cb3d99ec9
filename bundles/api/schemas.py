"""OpenAPI descriptions of the brain's bodies (documentation only: the views are the truth)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, inline_serializer
from rest_framework import serializers

from bundles.models import ImportJob
from formats import memoryai as protocol
from memoryadmin.api_errors import AUTH_ERRORS, error_responses


def _records() -> serializers.ListField:
    return serializers.ListField(child=serializers.DictField(), required=False)


def _tally() -> serializers.DictField:
    return serializers.DictField(child=serializers.IntegerField())


EXPORT_BODY = inline_serializer(
    "ExportRequest",
    {
        "scope": serializers.ChoiceField(choices=protocol.SCOPES, default="full"),
        "since": serializers.DateTimeField(
            required=False, allow_null=True, help_text="Required with scope 'since'."
        ),
    },
)
BUNDLE = inline_serializer(
    "Bundle",
    {
        "format": serializers.CharField(),
        "version": serializers.IntegerField(),
        "generator": serializers.CharField(),
        "exported_at": serializers.CharField(),
        "manifest": serializers.DictField(),
        **{name: _records() for name in protocol.SECTIONS},
    },
)


def _count(text: str) -> serializers.IntegerField:
    return serializers.IntegerField(help_text=text)


IMPORT_PROPOSALS = inline_serializer(
    "ImportProposals",
    {
        "repository": _count("The repository id given as propose_to."),
        "candidates": _count("DNA chunks of the bundle (the first 200 are considered)."),
        "proposed": _count("Written as proposals: they wait in the review queue."),
        "skipped_existing": _count(
            "Already known to the repository: there now (waiting for review, active or any "
            "other status), on its way there from an earlier import not pushed yet, or "
            "approved there before (even if the file was removed since)."
        ),
        "skipped_rejected": _count(
            "Rejected there by a reviewer (a pushed rejection of the same text); a warning per "
            "chunk names the decision, reviewer, date and comment. Counts until a reviewer "
            "allows it again (POST /api/reviews/decisions/{id}/allow-reproposal/)."
        ),
        "skipped_secret": _count("Not written: the secret scan found something."),
        "skipped_invalid": _count("Not written: the MemoryRail reader refused the file."),
        "skipped_limit": _count("DNA chunks past the 200 per import."),
        "proposal": serializers.IntegerField(
            allow_null=True, help_text="The import proposal (null when nothing was written)."
        ),
    },
    required=False,
    help_text="Only with propose_to.",
)
IMPORT_REPORT = inline_serializer(
    "ImportReport",
    {
        "success": serializers.BooleanField(),
        "report": inline_serializer(
            "ImportReportBody",
            {
                "bundle_format": serializers.CharField(),
                "bundle_version": serializers.IntegerField(),
                "embedding_model_match": serializers.BooleanField(),
                **{name: _tally() for name in protocol.SECTIONS},
                "warnings": serializers.ListField(child=serializers.CharField()),
                "proposals": IMPORT_PROPOSALS,
            },
        ),
    },
)
IMPORT_JOB = inline_serializer(
    "ImportJob",
    {
        "id": serializers.IntegerField(),
        "url": serializers.CharField(),
        "state": serializers.ChoiceField(choices=ImportJob._meta.get_field("state").choices),
        "filename": serializers.CharField(allow_blank=True),
        "size_bytes": serializers.IntegerField(),
        "progress": inline_serializer(
            "ImportProgress",
            {
                "records_done": serializers.IntegerField(),
                "records_total": serializers.IntegerField(),
            },
        ),
        "report": serializers.JSONField(allow_null=True, help_text="The ImportReport when done."),
        "error": inline_serializer(
            "ImportJobError",
            {"code": serializers.CharField(), "message": serializers.CharField()},
            allow_null=True,
        ),
        "created_at": serializers.CharField(),
        "started_at": serializers.CharField(allow_null=True),
        "finished_at": serializers.CharField(allow_null=True),
    },
)
IMPORT_FLAGS = [
    *(
        OpenApiParameter(name, OpenApiTypes.STR, enum=["true", "false"], description=text)
        for name, text in (
            ("keep_embeddings", "Default true; false drops every embedding."),
            ("accept_foreign_embeddings", "Default false; true keeps another model's embeddings."),
        )
    ),
    OpenApiParameter(
        "propose_to",
        OpenApiTypes.INT,
        description="Also propose the imported memories to this review repository (its id).",
    ),
]
IMPORT_RESPONSES = {
    200: IMPORT_REPORT,
    202: OpenApiResponse(
        inline_serializer("ImportAccepted", {"job": IMPORT_JOB}),
        description="Larger than the sync limit: a background job (URL also in Location).",
    ),
    **error_responses(400, *AUTH_ERRORS, 404, 413, 415, 422),
}
MINIMAL_BUNDLE = {
    "format": "memoryai-bundle",
    "version": 1,
    "generator": "example/1",
    "exported_at": "2026-01-05T09:00:00Z",
    "manifest": {
        "scope": "full",
        "embedding_model": "",
        "embedding_dim": 0,
        "counts": {"chunks": 1},
    },
    "chunks": [
        {
            "id": 1,
            "content": "We deploy on Tuesdays.",
            "content_hash": protocol.content_hash("We deploy on Tuesdays."),
            "memory_type": "decision",
            "created_at": "2026-01-05T09:00:00Z",
        }
    ],
}
