from __future__ import annotations

from django.urls import path

from webhooks import views

urlpatterns = [
    path("", views.endpoint_list, name="webhook-list"),
    path("<int:endpoint_id>/", views.endpoint_detail, name="webhook-detail"),
    path("<int:endpoint_id>/active/", views.endpoint_active, name="webhook-active"),
    path("<int:endpoint_id>/rotate/", views.endpoint_rotate, name="webhook-rotate"),
    path("<int:endpoint_id>/end-overlap/", views.endpoint_end_overlap, name="webhook-end-overlap"),
    path("<int:endpoint_id>/delete/", views.endpoint_delete, name="webhook-delete"),
    path("<int:endpoint_id>/ping/", views.endpoint_ping, name="webhook-ping"),
    path(
        "<int:endpoint_id>/deliveries/<int:delivery_id>/redeliver/",
        views.delivery_redeliver,
        name="webhook-redeliver",
    ),
]
