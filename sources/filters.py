"""The FilterSets of the sources pages: the source list and a source's records."""

from __future__ import annotations

import django_filters

from memoryadmin.listing import ListFilterSet, column, sort_by
from sources.models import Health, Record, Source, SourceKind, SourceState


class SourceFilterSet(ListFilterSet):
    search_fields = ("display_name", "identity")
    kind = django_filters.ChoiceFilter(choices=SourceKind.choices, label="Kind")
    state = django_filters.ChoiceFilter(choices=SourceState.choices, label="State")
    health = django_filters.ChoiceFilter(choices=Health.choices, label="Health")
    sort = sort_by(
        ("display_name", "name"),
        ("health", "health"),
        ("last_success_at", "read"),
        ("created_at", "added"),
    )
    csv_name = "sources"
    # The location, never a credential (it is stored apart, encrypted, and never shown).
    csv_columns = (
        column("id", "id"),
        column("name", "display_name"),
        column("kind", "kind"),
        column("location", "identity"),
        column("state", "state"),
        column("health", "health"),
        column("last_success", "last_success_at"),
        column("last_error_code", "last_error_code"),
        column("refresh_interval", "refresh_interval"),
        column("added", "created_at"),
    )

    class Meta:
        model = Source
        fields: list[str] = []


class RecordFilterSet(ListFilterSet):
    search_fields = ("title", "body", "record_id", "path")
    kind = django_filters.CharFilter(field_name="kind", lookup_expr="iexact", max_length=16)
    scope = django_filters.CharFilter(
        field_name="scope", lookup_expr="istartswith", label="Scope starts with", max_length=1000
    )
    sort = sort_by(("updated", "updated"), ("title", "title"), ("kind", "kind"), ("scope", "scope"))
    csv_name = "records"
    csv_columns = (
        column("record_id", "record_id"),
        column("kind", "kind"),
        column("scope", "scope"),
        column("title", "title"),
        column("path", "path"),
        column("tags", "tags"),
        column("created", "created"),
        column("updated", "updated"),
        column("expires", "expires"),
    )

    class Meta:
        model = Record
        fields: list[str] = []
