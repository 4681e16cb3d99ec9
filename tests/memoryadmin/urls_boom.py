"""A test-only URLconf: the real one plus views that fail, for the error pages' tests."""

from __future__ import annotations

from django.core.exceptions import SuspiciousOperation
from django.urls import path
from django_ratelimit.exceptions import Ratelimited

from memoryadmin.urls import handler400, handler403, handler404, handler500  # noqa: F401
from memoryadmin.urls import urlpatterns as real_patterns


def boom(request):  # type: ignore[no-untyped-def]
    raise RuntimeError("a bug")


def suspicious(request):  # type: ignore[no-untyped-def]
    raise SuspiciousOperation("bad header")


def limited(request):  # type: ignore[no-untyped-def]
    raise Ratelimited()


urlpatterns = [
    path("boom/", boom),
    path("api/boom/", boom),
    path("suspicious/", suspicious),
    path("limited/", limited),
    *real_patterns,
]
