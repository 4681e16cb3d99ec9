"""The §4 paths exactly as the spec writes them (no trailing slash: a redirect drops a POST),
and the agents' context list at /api/context/."""

from __future__ import annotations

from django.urls import path

from bundles.api import agents, chunks, cleanup, context, embeddings, exports, imports, usage

urlpatterns = [
    path("v1/brain/export", exports.ExportView.as_view(), name="bundle-export"),
    path("v1/brain/export/stream", exports.ExportStreamView.as_view(), name="bundle-export-stream"),
    path("v1/brain/import", imports.ImportView.as_view(), name="bundle-import"),
    path("v1/brain/import/file", imports.ImportFileView.as_view(), name="bundle-import-file"),
    path(
        "v1/brain/import/jobs/<int:job_id>",
        imports.ImportJobView.as_view(),
        name="bundle-import-job",
    ),
    path("v1/spec", exports.SpecView.as_view(), name="bundle-spec"),
    path("api/context/", context.ContextView.as_view(), name="api-context"),
    path(
        "api/brain/embeddings/",
        embeddings.EmbeddingStatusView.as_view(),
        name="api-brain-embeddings",
    ),
    path("api/brain/chunks/", chunks.ChunkListView.as_view(), name="api-brain-chunks"),
    path(
        "api/brain/chunks/<int:chunk_id>/",
        cleanup.ChunkDeleteView.as_view(),
        name="api-brain-chunk",
    ),
    path(
        "api/brain/imports/<int:import_id>/undo/",
        cleanup.ImportUndoView.as_view(),
        name="api-brain-import-undo",
    ),
    path("api/search/", agents.SearchView.as_view(), name="api-search"),
    path("api/precheck/", agents.PrecheckView.as_view(), name="api-precheck"),
    path("api/memories/", agents.ProposeView.as_view(), name="api-memory-propose"),
    path("api/memories/<path:ref>/", agents.MemoryView.as_view(), name="api-memory"),
    path("api/usage/", usage.UsageView.as_view(), name="api-usage"),
]
