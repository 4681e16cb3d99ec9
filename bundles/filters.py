"""The FilterSet of the Brain page's chunk list (the page and its CSV export)."""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet

from bundles.models import Chunk, Origin
from bundles.secrets import mask_secrets
from formats.memoryai.fields import ZONES
from memoryadmin.listing import Column, ListFilterSet, column, date_range, sort_by

CHUNK_FLAGS = (
    ("suspicious", "Looked like prompt injection"),
    ("secret", "Looked like a secret"),
    ("withdrawn", "Approval withdrawn (not served)"),
    ("dna", "DNA"),
    ("pinned", "Pinned"),
)


class ChunkFilterSet(ListFilterSet):
    search_fields = ("content",)
    type = django_filters.CharFilter(
        field_name="memory_type", lookup_expr="iexact", label="Type", max_length=64
    )
    zone = django_filters.ChoiceFilter(choices=[(z, z) for z in ZONES], label="Zone")
    origin = django_filters.ChoiceFilter(choices=Origin.choices, label="Origin")
    flag = django_filters.ChoiceFilter(
        choices=CHUNK_FLAGS, method="filter_flag", label="Flag", empty_label="Any"
    )
    after, before = date_range("created_at")
    sort = sort_by(
        ("id", "id"),
        ("memory_type", "type"),
        ("zone", "zone"),
        ("importance", "importance"),
    )
    csv_name = "brain"
    # Content masked like the page shows it: a chunk that looked like a credential never leaves
    # in clear through a spreadsheet.
    csv_columns = (
        column("id", "id"),
        column("type", "memory_type"),
        column("zone", "zone"),
        column("origin", "origin"),
        column("dna", "is_dna"),
        column("pinned", "is_pinned"),
        Column("served", lambda c: bool(c["standalone"] or c["has_active_origin"])),
        column("suspicious", "suspicious"),
        Column("secret", lambda c: bool(c["secret_findings"])),
        column("created", "created"),
        Column("content", lambda c: mask_secrets(c["content"], c["secret_findings"])),
    )
    # The export reads plain rows (no model per chunk): what the columns above name.
    csv_fields = (
        "id",
        "memory_type",
        "zone",
        "origin",
        "is_dna",
        "is_pinned",
        "standalone",
        "has_active_origin",
        "suspicious",
        "secret_findings",
        "created",
        "content",
    )

    class Meta:
        model = Chunk
        fields: list[str] = []

    def filter_flag(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(
            {
                "suspicious": Q(suspicious=True),
                "secret": ~Q(secret_findings=[]),
                "withdrawn": Q(standalone=False, has_active_origin=False),
                "dna": Q(is_dna=True),
                "pinned": Q(is_pinned=True),
            }[value]
        )

    def csv_queryset(self, queryset: QuerySet) -> QuerySet:
        # The origins' names are on the page only; rows as dicts, not models.
        return queryset.prefetch_related(None).values(*self.csv_fields)
