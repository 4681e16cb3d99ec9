from __future__ import annotations

from django.contrib import admin
from django.db import models

from webhooks.models import WebhookDelivery, WebhookEndpoint


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    """Read-only: endpoints are changed on the team's webhook pages so changes are audited."""

    list_display = ["url", "team", "is_active", "last_delivery_state", "last_delivery_at"]
    list_filter = ["team", "is_active"]
    search_fields = ["url", "description"]
    exclude = ["secret_encrypted"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}  # Django 6 default

    def has_add_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ["uid", "event", "endpoint", "state", "attempts", "last_response_status"]
    list_filter = ["state", "event"]
    list_select_related = ["endpoint"]

    def has_add_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False
