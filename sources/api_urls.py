from __future__ import annotations

from django.urls import path

from sources import api, api_admin

urlpatterns = [
    path("sources/", api.SourceListView.as_view(), name="api-source-list"),
    path("sources/test/", api_admin.SourceTestView.as_view(), name="api-source-test"),
    path("sources/<int:pk>/", api.SourceDetailView.as_view(), name="api-source-detail"),
    path(
        "sources/<int:pk>/approve/",
        api_admin.SourceStateView.as_view(transition="approve"),
        name="api-source-approve",
    ),
    path(
        "sources/<int:pk>/disable/",
        api_admin.SourceStateView.as_view(transition="disable"),
        name="api-source-disable",
    ),
    path(
        "sources/<int:pk>/credential/",
        api.SourceCredentialView.as_view(),
        name="api-source-credential",
    ),
    path(
        "sources/<int:pk>/records/",
        api.SourceRecordsView.as_view(),
        name="api-source-records",
    ),
    path(
        "sources/<int:pk>/runs/latest/",
        api.SourceLatestRunView.as_view(),
        name="api-source-latest-run",
    ),
]
