"""The FilterSet of an endpoint's delivery list."""

from __future__ import annotations

import django_filters

from memoryadmin.listing import ListFilterSet, column, date_range, sort_by
from webhooks.models import DeliveryState, WebhookDelivery


class DeliveryFilterSet(ListFilterSet):
    search_fields = ("event", "last_error")
    event = django_filters.CharFilter(
        field_name="event", lookup_expr="istartswith", label="Event", max_length=64
    )
    state = django_filters.ChoiceFilter(choices=DeliveryState.choices, label="State")
    status = django_filters.NumberFilter(
        field_name="last_response_status", label="HTTP status", min_value=100, max_value=599
    )
    after, before = date_range("created_at")
    sort = sort_by(("created_at", "when"), ("state", "state"), ("duration_ms", "duration"))
    csv_name = "deliveries"
    # Never the payload or the signature: what the page shows.
    csv_columns = (
        column("uid", "uid"),
        column("event", "event"),
        column("state", "state"),
        column("attempts", "attempts"),
        column("http_status", "last_response_status"),
        column("error", "last_error"),
        column("duration_ms", "duration_ms"),
        column("created", "created_at"),
        column("finished", "finished_at"),
    )

    class Meta:
        model = WebhookDelivery
        fields: list[str] = []
