from __future__ import annotations

from django.urls import path

from reviews import api

urlpatterns = [
    path("reviews/repositories/", api.RepositoryList.as_view(), name="api-repository-list"),
    path(
        "reviews/repositories/<int:pk>/",
        api.RepositoryDetail.as_view(),
        name="api-repository-detail",
    ),
    path("reviews/proposals/", api.ProposalList.as_view(), name="api-proposal-list"),
    path("reviews/proposals/<str:key>/", api.ProposalDetail.as_view(), name="api-proposal-detail"),
    path(
        "reviews/proposals/<str:key>/reveal/",
        api.ProposalReveal.as_view(),
        name="api-proposal-reveal",
    ),
    path(
        "reviews/proposals/<str:key>/approve/",
        api.ProposalApprove.as_view(),
        name="api-proposal-approve",
    ),
    path(
        "reviews/proposals/<str:key>/reject/",
        api.ProposalReject.as_view(),
        name="api-proposal-reject",
    ),
    path("reviews/batch/", api.Batch.as_view(), name="api-review-batch"),
    path("reviews/decisions/", api.DecisionList.as_view(), name="api-decision-list"),
    path("reviews/decisions/<int:pk>/", api.DecisionDetail.as_view(), name="api-decision-detail"),
    path(
        "reviews/decisions/<int:pk>/retry/",
        api.DecisionRetry.as_view(),
        name="api-decision-retry",
    ),
    path(
        "reviews/decisions/<int:pk>/allow-reproposal/",
        api.DecisionAllowReproposal.as_view(),
        name="api-decision-allow-reproposal",
    ),
]
