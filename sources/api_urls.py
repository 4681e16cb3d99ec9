from __future__ import annotations

from django.urls import path

from sources import api

urlpatterns = [
    path("sources/", api.SourceListView.as_view(), name="api-source-list"),
    path("sources/<int:pk>/", api.SourceDetailView.as_view(), name="api-source-detail"),
    path(
        "sources/<int:pk>/credential/",
        api.SourceCredentialView.as_view(),
        name="api-source-credential",
    ),
    path(
        "sources/<int:pk>/runs/latest/",
        api.SourceLatestRunView.as_view(),
        name="api-source-latest-run",
    ),
]
