from __future__ import annotations

from django.urls import path

from bundles import views

urlpatterns = [
    path("", views.brain, name="brain"),
    path("export/", views.brain_export, name="brain-export"),
    path("import/", views.brain_import, name="brain-import"),
    path("jobs/<int:job_id>/", views.brain_job, name="brain-job"),
]
