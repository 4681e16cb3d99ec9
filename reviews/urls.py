from __future__ import annotations

from django.urls import path

from reviews import views

urlpatterns = [path("", views.review_queue, name="review-queue")]
