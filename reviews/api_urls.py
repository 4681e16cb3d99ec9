from __future__ import annotations

from django.urls import path

from reviews.api import decisions, proposals, repositories

urlpatterns = [
    path(
        "reviews/repositories/", repositories.RepositoryList.as_view(), name="api-repository-list"
    ),
    path(
        "reviews/repositories/<int:pk>/",
        repositories.RepositoryDetail.as_view(),
        name="api-repository-detail",
    ),
    path(
        "reviews/repositories/test/",
        repositories.RepositoryTest.as_view(),
        name="api-repository-test",
    ),
    path(
        "reviews/repositories/<int:pk>/sync/",
        repositories.RepositorySync.as_view(),
        name="api-repository-sync",
    ),
    path(
        "reviews/repositories/<int:pk>/disable/",
        repositories.RepositoryEnabled.as_view(enabled=False),
        name="api-repository-disable",
    ),
    path(
        "reviews/repositories/<int:pk>/enable/",
        repositories.RepositoryEnabled.as_view(enabled=True),
        name="api-repository-enable",
    ),
    path("reviews/proposals/", proposals.ProposalList.as_view(), name="api-proposal-list"),
    path(
        "reviews/proposals/<str:key>/",
        proposals.ProposalDetail.as_view(),
        name="api-proposal-detail",
    ),
    path(
        "reviews/proposals/<str:key>/reveal/",
        proposals.ProposalReveal.as_view(),
        name="api-proposal-reveal",
    ),
    path(
        "reviews/proposals/<str:key>/approve/",
        proposals.ProposalApprove.as_view(),
        name="api-proposal-approve",
    ),
    path(
        "reviews/proposals/<str:key>/reject/",
        proposals.ProposalReject.as_view(),
        name="api-proposal-reject",
    ),
    path("reviews/batch/", proposals.Batch.as_view(), name="api-review-batch"),
    path("reviews/decisions/", decisions.DecisionList.as_view(), name="api-decision-list"),
    path(
        "reviews/decisions/<int:pk>/",
        decisions.DecisionDetail.as_view(),
        name="api-decision-detail",
    ),
    path(
        "reviews/decisions/<int:pk>/retry/",
        decisions.DecisionRetry.as_view(),
        name="api-decision-retry",
    ),
    path(
        "reviews/decisions/<int:pk>/allow-reproposal/",
        decisions.DecisionAllowReproposal.as_view(),
        name="api-decision-allow-reproposal",
    ),
]
