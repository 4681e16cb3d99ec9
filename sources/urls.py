from __future__ import annotations

from django.urls import path

from sources import views

urlpatterns = [
    path("", views.source_list, name="source-list"),
    path("add/", views.source_add, name="source-add"),
    path("<int:source_id>/", views.source_detail, name="source-detail"),
    path("<int:source_id>/edit/", views.source_edit, name="source-edit"),
    path("<int:source_id>/approve/", views.source_approve, name="source-approve"),
    path("<int:source_id>/disable/", views.source_disable, name="source-disable"),
    path("<int:source_id>/refresh/", views.source_refresh, name="source-refresh"),
    path("<int:source_id>/credential/", views.source_credential, name="source-credential"),
    path(
        "<int:source_id>/credential/clear/",
        views.source_credential_clear,
        name="source-credential-clear",
    ),
    path("<int:source_id>/delete/", views.source_delete, name="source-delete"),
    path("<int:source_id>/runs/<int:run_id>/", views.run_status, name="source-run-status"),
]
