from __future__ import annotations

from django.urls import path

from reviews import views

urlpatterns = [
    path("", views.review_queue, name="review-queue"),
    path("batch/", views.review_batch, name="review-batch"),
    path("history/", views.review_history, name="review-history"),
    path("settings/", views.review_settings_edit, name="review-settings"),
    path("decisions/<int:decision_pk>/retry/", views.decision_retry, name="decision-retry"),
    path(
        "decisions/<int:decision_pk>/allow-reproposal/",
        views.decision_reproposal_allow,
        name="decision-allow-reproposal",
    ),
    path("p/<int:memory_pk>/", views.proposal_detail, name="proposal-detail"),
    path("p/<int:memory_pk>/decisions/", views.proposal_decisions, name="proposal-decisions"),
    path("p/<int:memory_pk>/reveal/", views.proposal_reveal, name="proposal-reveal"),
    path(
        "p/<int:memory_pk>/approve/",
        views.proposal_decide,
        {"kind": "approve"},
        name="proposal-approve",
    ),
    path(
        "p/<int:memory_pk>/reject/",
        views.proposal_decide,
        {"kind": "reject"},
        name="proposal-reject",
    ),
    path("repositories/", views.repository_list, name="repository-list"),
    path("repositories/add/", views.repository_add, name="repository-add"),
    path("repositories/<int:repository_pk>/", views.repository_detail, name="repository-detail"),
    path("repositories/<int:repository_pk>/sync/", views.repository_sync, name="repository-sync"),
    path(
        "repositories/<int:repository_pk>/sync-status/",
        views.repository_sync_status,
        name="repository-sync-status",
    ),
    path(
        "repositories/<int:repository_pk>/routing/",
        views.repository_routing,
        name="repository-routing",
    ),
]
