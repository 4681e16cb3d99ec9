from __future__ import annotations

from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "sources"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the tasks that services queue by name (memoryadmin.queue) in every process.
        from sources import tasks  # noqa: F401
