from __future__ import annotations

from django.urls import path

from webhooks import api

urlpatterns = [
    path("webhooks/", api.EndpointList.as_view(), name="api-webhook-list"),
    path("webhooks/<int:pk>/", api.EndpointDetail.as_view(), name="api-webhook-detail"),
    path("webhooks/<int:pk>/rotate/", api.EndpointRotate.as_view(), name="api-webhook-rotate"),
    path(
        "webhooks/<int:pk>/deliveries/", api.DeliveryList.as_view(), name="api-webhook-deliveries"
    ),
    path("webhooks/<int:pk>/test/", api.EndpointTest.as_view(), name="api-webhook-test"),
    path(
        "webhooks/<int:pk>/end-overlap/",
        api.EndpointEndOverlap.as_view(),
        name="api-webhook-end-overlap",
    ),
]
