"""Reads for the webhook pages."""

from __future__ import annotations

from django.db.models import QuerySet

from memoryadmin.models import Team
from webhooks.models import WebhookDelivery, WebhookEndpoint


def endpoints_for(team: Team) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(team=team).defer("secret_encrypted")


def deliveries_for(endpoint: WebhookEndpoint) -> QuerySet[WebhookDelivery]:
    return WebhookDelivery.objects.filter(endpoint=endpoint).defer("payload")
