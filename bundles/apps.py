from __future__ import annotations

from django.apps import AppConfig


class BundlesConfig(AppConfig):
    name = "bundles"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from bundles import (
            receivers,  # noqa: F401  (connects the mirror to the signals)
            tasks,  # noqa: F401  (registers the tasks queued by name)
        )
        from bundles.embeddings.lifecycle import semantic_health
        from memoryadmin.health import register_info_section

        register_info_section("semantic", semantic_health)
