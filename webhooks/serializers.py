from __future__ import annotations

from rest_framework import serializers

from webhooks import events as ev
from webhooks.models import WebhookDelivery, WebhookEndpoint


class EndpointSerializer(serializers.ModelSerializer):
    """An endpoint as the API shows it: never its secret."""

    events = serializers.ListField(
        child=serializers.ChoiceField(choices=ev.ALL_EVENTS),
        help_text="Event names it receives; empty: every event.",
    )
    active = serializers.BooleanField(source="is_active")
    last_delivery_state = serializers.CharField(
        help_text="pending, retrying, succeeded or failed; empty before the first delivery."
    )
    previous_secret_until = serializers.DateTimeField(
        source="previous_secret_expires_at",
        allow_null=True,
        help_text="Until when the rotated-out secret also signs "
        "(X-Memoryadmin-Signature-Previous).",
    )

    class Meta:
        model = WebhookEndpoint
        fields = [
            "id",
            "url",
            "description",
            "events",
            "active",
            "secret_rotated_at",
            "previous_secret_until",
            "created_at",
            "updated_at",
            "last_delivery_at",
            "last_delivery_state",
            "last_response_status",
        ]
        read_only_fields = fields


class EndpointInputSerializer(serializers.Serializer):
    url = serializers.CharField(max_length=2000)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=ev.ALL_EVENTS), required=False, default=list
    )
    description = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default=""
    )
    active = serializers.BooleanField(required=False)


class EndpointWithSecretSerializer(EndpointSerializer):
    secret = serializers.CharField(help_text="The signing secret, shown this once.")

    class Meta(EndpointSerializer.Meta):
        fields = [*EndpointSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class RotateInputSerializer(serializers.Serializer):
    overlap_hours = serializers.IntegerField(
        min_value=0,
        max_value=720,
        required=False,
        help_text="Hours the old secret keeps signing "
        "(default: MEMORYADMIN_WEBHOOK_SECRET_OVERLAP_HOURS).",
    )


class DeliverySerializer(serializers.ModelSerializer):
    """A delivery as the endpoint's list shows it: never its payload or signature."""

    class Meta:
        model = WebhookDelivery
        fields = [
            "uid",
            "event",
            "state",
            "attempts",
            "last_response_status",
            "last_error",
            "duration_ms",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields


class TestSentSerializer(serializers.Serializer):
    succeeded = serializers.BooleanField(help_text="The receiver answered 2xx.")
    code = serializers.CharField(
        help_text="delivered, http-status, redirect-refused, timeout, deadline-passed, "
        "connect-failed, tls-failed, transport-failed, dns-failed, address-not-public, …"
    )
    status = serializers.IntegerField(
        allow_null=True, help_text="The receiver's HTTP status; null when none came."
    )
    message = serializers.CharField(help_text="What happened, in words.")
    delivery = DeliverySerializer(help_text="The test delivery, as in the endpoint's list.")
