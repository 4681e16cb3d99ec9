from __future__ import annotations

from django.apps import AppConfig


class MemoryadminConfig(AppConfig):
    name = "memoryadmin"
    verbose_name = "memoryadmin core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core import checks

        from memoryadmin.staticcheck import check_static_collected

        # Deploy only: `collectstatic` itself and `migrate` must run before the files exist.
        checks.register(check_static_collected, checks.Tags.staticfiles, deploy=True)
