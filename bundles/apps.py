from __future__ import annotations

from django.apps import AppConfig


class BundlesConfig(AppConfig):
    name = "bundles"
    default_auto_field = "django.db.models.BigAutoField"
