from __future__ import annotations

from django.urls import path

from bundles import cleanup_views, views

urlpatterns = [
    path("", views.brain, name="brain"),
    path("export/", views.brain_export, name="brain-export"),
    path("import/", views.brain_import, name="brain-import"),
    path("jobs/<int:job_id>/", views.brain_job, name="brain-job"),
    path("chunks/<int:chunk_id>/delete/", cleanup_views.chunk_delete, name="brain-chunk-delete"),
    path("imports/<int:import_id>/undo/", cleanup_views.import_undo_view, name="brain-import-undo"),
]
