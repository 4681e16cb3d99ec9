from __future__ import annotations

from django.urls import path

from reviews.views import decisions, proposals, queue, repositories, repository_admin, settings

urlpatterns = [
    path("", queue.review_queue, name="review-queue"),
    path("batch/", proposals.review_batch, name="review-batch"),
    path("history/", queue.review_history, name="review-history"),
    path("settings/", settings.review_settings_edit, name="review-settings"),
    path("decisions/<int:decision_pk>/", decisions.decision_detail, name="decision-detail"),
    path("decisions/<int:decision_pk>/retry/", proposals.decision_retry, name="decision-retry"),
    path(
        "decisions/<int:decision_pk>/allow-reproposal/",
        proposals.decision_reproposal_allow,
        name="decision-allow-reproposal",
    ),
    path("p/<int:memory_pk>/", proposals.proposal_detail, name="proposal-detail"),
    path("p/<int:memory_pk>/decisions/", proposals.proposal_decisions, name="proposal-decisions"),
    path("p/<int:memory_pk>/reveal/", proposals.proposal_reveal, name="proposal-reveal"),
    path(
        "p/<int:memory_pk>/approve/",
        proposals.proposal_decide,
        {"kind": "approve"},
        name="proposal-approve",
    ),
    path(
        "p/<int:memory_pk>/reject/",
        proposals.proposal_decide,
        {"kind": "reject"},
        name="proposal-reject",
    ),
    path("repositories/", repositories.repository_list, name="repository-list"),
    path("repositories/add/", repositories.repository_add, name="repository-add"),
    path(
        "repositories/<int:repository_pk>/",
        repositories.repository_detail,
        name="repository-detail",
    ),
    path(
        "repositories/<int:repository_pk>/edit/",
        repository_admin.repository_edit,
        name="repository-edit",
    ),
    path(
        "repositories/<int:repository_pk>/disable/",
        repository_admin.repository_disable,
        name="repository-disable",
    ),
    path(
        "repositories/<int:repository_pk>/enable/",
        repository_admin.repository_enable,
        name="repository-enable",
    ),
    path(
        "repositories/<int:repository_pk>/delete/",
        repository_admin.repository_delete,
        name="repository-delete",
    ),
    path(
        "repositories/<int:repository_pk>/sync/",
        repositories.repository_sync,
        name="repository-sync",
    ),
    path(
        "repositories/<int:repository_pk>/sync-status/",
        repositories.repository_sync_status,
        name="repository-sync-status",
    ),
    path(
        "repositories/<int:repository_pk>/routing/",
        repositories.repository_routing,
        name="repository-routing",
    ),
]
