"""A test-only URLconf: one API view guarded by HasScope, beside the real /api/me/."""

from __future__ import annotations

from django.urls import path
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryadmin.api import HasScope, request_team
from memoryadmin.api_views import MeView


class ScopedView(APIView):
    permission_classes = [IsAuthenticated, HasScope]
    required_scopes = {"GET": "sources:read", "POST": "reviews:write"}

    def get(self, request: Request) -> Response:
        return Response({"team": request_team(request).slug})

    def post(self, request: Request) -> Response:
        return Response({"team": request_team(request).slug, "written": True})


class UndeclaredView(APIView):
    permission_classes = [HasScope]  # no required_scopes: nobody may call it

    def get(self, request: Request) -> Response:
        return Response({})


urlpatterns = [
    path("api/me/", MeView.as_view()),
    path("api/scoped/", ScopedView.as_view()),
    path("api/undeclared/", UndeclaredView.as_view()),
]
