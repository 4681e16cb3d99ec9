from __future__ import annotations

from django.apps import AppConfig


class MemoryadminConfig(AppConfig):
    name = "memoryadmin"
    verbose_name = "memoryadmin core"
    default_auto_field = "django.db.models.BigAutoField"
