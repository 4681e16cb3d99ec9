from __future__ import annotations

from django.urls import path

from sources import views

urlpatterns = [path("", views.source_list, name="source-list")]
