"""Webhook endpoints a team registers and the deliveries of events to them."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from memoryadmin.models import Team


class DeliveryState(models.TextChoices):
    PENDING = "pending", "Pending"
    RETRYING = "retrying", "Retrying"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


class WebhookEndpoint(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=200, blank=True)
    # Event names this endpoint receives; an empty list means every event.
    events = models.JSONField(default=list, blank=True)
    # Fernet ciphertext (memoryadmin.crypto); the clear secret is shown once, at creation/rotation.
    secret_encrypted = models.TextField(editable=False)
    secret_rotated_at = models.DateTimeField(default=timezone.now)
    # The secret before the last rotation, still signing deliveries (a second header) until
    # `previous_secret_expires_at`, so a receiver can switch without dropping any.
    previous_secret_encrypted = models.TextField(blank=True, default="", editable=False)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    is_active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    last_delivery_at = models.DateTimeField(null=True, blank=True)
    last_delivery_state = models.CharField(max_length=16, choices=DeliveryState.choices, blank=True)
    last_response_status = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["team", "created_at", "id"]
        indexes = [models.Index(fields=["team", "is_active"])]

    def __str__(self) -> str:
        return self.url

    @property
    def events_label(self) -> str:
        return ", ".join(self.events) if self.events else "all events"


class WebhookDelivery(models.Model):
    """One event sent (or to be sent) to one endpoint; a row, not an audit event."""

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    # Sent as X-Memoryadmin-Delivery; unique per row, a redelivery gets a new one.
    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    event = models.CharField(max_length=64)
    # The JSON body as sent: {"id", "event", "team", "created_at", "data"}; "id" is the event id.
    payload = models.JSONField()
    state = models.CharField(
        max_length=16, choices=DeliveryState.choices, default=DeliveryState.PENDING
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    # When the next attempt is due; while an attempt runs it is the claim's lease expiry.
    next_attempt_at = models.DateTimeField(null=True, blank=True, default=timezone.now)
    last_response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    redelivery_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["endpoint", "-created_at"]),
            models.Index(fields=["state", "next_attempt_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.endpoint_id} ({self.state})"

    @property
    def is_finished(self) -> bool:
        return self.state in (DeliveryState.SUCCEEDED, DeliveryState.FAILED)
