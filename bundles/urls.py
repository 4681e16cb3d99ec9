from __future__ import annotations

from django.urls import path

from bundles import views

urlpatterns = [path("", views.brain, name="brain")]
