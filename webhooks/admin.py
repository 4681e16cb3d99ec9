from __future__ import annotations

from django.contrib import admin
from django.db import models

from memoryadmin.admin import ReadOnlyAdmin
from webhooks.models import WebhookDelivery, WebhookEndpoint


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyAdmin):
    """Read-only: endpoints are changed on the team's webhook pages so changes are audited."""

    list_display = ["url", "team", "is_active", "last_delivery_state", "last_delivery_at"]
    list_filter = ["team", "is_active"]
    search_fields = ["url", "description"]
    exclude = ["secret_encrypted"]
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}  # Django 6 default


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = ["uid", "event", "endpoint", "state", "attempts", "last_response_status"]
    list_filter = ["state", "event"]
    list_select_related = ["endpoint"]
