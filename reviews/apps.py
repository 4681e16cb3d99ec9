from __future__ import annotations

from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "reviews"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the tasks that services queue by name (memoryadmin.queue) in every process.
        from reviews import tasks  # noqa: F401
