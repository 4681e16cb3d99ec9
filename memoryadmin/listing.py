"""Team lists: one django-filter FilterSet per list, shared by its page and its API endpoint.

A list's FilterSet (`ListFilterSet` subclass, in the app's `filters.py`) declares the quick
search (`search_fields`, the `q` parameter), its filters, its whitelisted orderings (`sort`) and
its CSV columns. A page builds a `Listing` from the request: the filtered page, the pager and,
for `?export=csv`, a streamed CSV of everything the filters match (never the page only).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import reduce
from operator import or_
from typing import Any

import django_filters
from django import forms
from django.core.paginator import Page, Paginator
from django.db.models import Q, QuerySet
from django.http import HttpRequest, QueryDict, StreamingHttpResponse
from django.utils import timezone
from django_filters.constants import EMPTY_VALUES

CSV_CHUNK = 2000
# A spreadsheet runs a cell starting with one of these as a formula (OWASP "CSV injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_FORMULA = frozenset(FORMULA_STARTS)  # one character each: `text[:1] in` is startswith
CSV_CHUNK_CHARS = 64 * 1024  # the streamed CSV is flushed in pieces of about this size


@dataclass(frozen=True)
class Column:
    """One CSV column: its header and how a row's value is read."""

    header: str
    value: Callable[[Any], Any]


def column(header: str, path: str) -> Column:
    """A column reading a dotted attribute path (`created_by.username`), or a key of the dicts
    a `values()` export reads; None stays empty."""

    def read(obj: Any) -> Any:
        for part in path.split("."):
            obj = obj.get(part) if isinstance(obj, dict) else getattr(obj, part, None)
            if obj is None:
                return None
        return obj() if callable(obj) else obj

    return Column(header, read)


def csv_cell(value: Any, zone: dt.tzinfo | None = None) -> str:
    """A cell's text: times in ISO 8601 in `zone` (the current one by default), lists joined,
    formula starts made literal. The value's type picks its conversion: one check per cell."""
    kind = type(value)
    if kind is str:
        text = value
    elif value is None:
        return ""
    elif kind is bool:
        return "yes" if value else "no"
    elif isinstance(value, dt.datetime):
        if not timezone.is_aware(value):
            return str(value)
        return value.astimezone(zone or timezone.get_current_timezone()).isoformat()
    elif isinstance(value, list | tuple):
        text = " ".join(str(item) for item in value)
    else:
        text = str(value)
    return "'" + text if text[:1] in _FORMULA else text


def csv_chunks(
    columns: Iterable[Column], rows: Iterable[Any], *, chunk_chars: int = CSV_CHUNK_CHARS
) -> Iterator[str]:
    """The CSV of `rows`, header first, as strings of about `chunk_chars` characters: the zone is
    read once and rows are buffered, not handed to the response one small string at a time."""
    columns = list(columns)
    readers = [c.value for c in columns]
    zone = timezone.get_current_timezone()
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([c.header for c in columns])
    for row in rows:
        writer.writerow([csv_cell(read(row), zone) for read in readers])
        if buffer.tell() >= chunk_chars:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue()


def csv_response(filename: str, columns: Iterable[Column], rows: Iterable[Any]):
    """A streamed CSV download: rows are read in chunks, so memory stays flat for any count."""
    response = StreamingHttpResponse(csv_chunks(columns, rows), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response


class ListFilterSet(django_filters.FilterSet):
    """The base of every team list's FilterSet: quick search, ordering, CSV columns."""

    q = django_filters.CharFilter(method="filter_search", label="Search", max_length=200)

    search_fields: tuple[str, ...] = ()
    csv_columns: tuple[Column, ...] = ()
    csv_name = "list"

    def __init__(self, data=None, queryset=None, *, request=None, prefix=None, team=None):  # type: ignore[no-untyped-def]
        self.team = team
        super().__init__(data, queryset=queryset, request=request, prefix=prefix)

    def get_form_class(self):  # type: ignore[no-untyped-def]
        base = super().get_form_class()

        class ListForm(base):  # type: ignore[valid-type, misc]
            def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
                kwargs.setdefault("auto_id", "f-%s")  # the ids the filter bar's labels name
                super().__init__(*args, **kwargs)

        return ListForm

    def filter_search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        words = value.split()
        for word in words[:8]:
            queryset = queryset.filter(
                reduce(or_, (Q(**{f"{field}__icontains": word}) for field in self.search_fields))
            )
        return queryset

    @property
    def results(self) -> QuerySet:
        """The filtered queryset, or nothing when a filter value is invalid (never a guess)."""
        if not self.is_valid():
            return self.queryset.none()
        return self.qs

    def csv_queryset(self, queryset: QuerySet) -> QuerySet:
        """What the CSV reads (a subclass may trim prefetches the export does not need)."""
        return queryset

    def csv_rows(self) -> Iterator[Any]:
        return self.csv_queryset(self.results).iterator(chunk_size=CSV_CHUNK)

    @property
    def active(self) -> bool:
        """Whether any filter or search narrows the list (the page says so and offers a reset)."""
        return self.is_bound and any(
            self.form.cleaned_data.get(name) not in (None, "", [])
            for name in self.filters
            if name != "sort" and self.is_valid()
        )


DATE_INPUT = forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")


def date_range(field: str) -> tuple[django_filters.DateFilter, django_filters.DateFilter]:
    """`after` and `before` filters on a datetime column, both days included."""
    return (
        django_filters.DateFilter(
            field_name=field, lookup_expr="date__gte", label="From", widget=DATE_INPUT
        ),
        django_filters.DateFilter(
            field_name=field, lookup_expr="date__lte", label="Until", widget=DATE_INPUT
        ),
    )


class SortFilter(django_filters.OrderingFilter):
    """A whitelisted ordering that ends on the primary key, so rows with equal values (one
    role, one state) keep their place from page to page."""

    def filter(self, qs: QuerySet, value: Any) -> QuerySet:
        qs = super().filter(qs, value)
        if value in EMPTY_VALUES:
            return qs
        terms = [str(term).lstrip("-") for term in qs.query.order_by]
        return qs if "pk" in terms or "id" in terms else qs.order_by(*qs.query.order_by, "pk")

    def url_name(self, field: str) -> str | None:
        """The URL name of an ordering term (`-created_at` → `-when`), None outside the list."""
        descending = field.startswith("-")
        plain = field.lstrip("-")
        for name, column in self.param_map.items():
            if column == plain or (plain == "pk" and column == "id"):
                return f"-{name}" if descending else name
        return None

    def current(self, filterset: django_filters.FilterSet) -> str | None:
        """The ordering the list shows: the `sort` asked for when whitelisted, else the
        queryset's own first ordering term when it is one of the list's columns."""
        asked = str(filterset.data.get(self.field_name) or "").split(",")[0].strip()
        if asked and asked.lstrip("-") in self.param_map:
            return asked
        query = filterset.queryset.query
        terms = list(query.order_by) or (
            list(filterset.queryset.model._meta.ordering) if query.default_ordering else []
        )
        first = terms[0] if terms and isinstance(terms[0], str) else None
        return self.url_name(first) if first else None


def sort_by(*fields: tuple[str, str]) -> SortFilter:
    """The list's `sort` parameter: (column, name in the URL) pairs, the only orderings accepted.
    Column headers link to them (`{% sort_header "name" "Name" %}`, templatetags/listing.py)."""
    return SortFilter(fields=fields, label="Sort", empty_label="Default order")


def yes_no(label: str, **kwargs: Any) -> django_filters.BooleanFilter:
    return django_filters.BooleanFilter(
        label=label,
        widget=django_filters.widgets.BooleanWidget(),
        **kwargs,
    )


@dataclass
class Listing:
    """A list page's state: the bound FilterSet, the page and the CSV download."""

    filterset: ListFilterSet
    page: Page

    @property
    def invalid(self) -> bool:
        return not self.filterset.is_valid()

    @property
    def status(self) -> int:
        return 400 if self.invalid else 200

    def csv(self) -> StreamingHttpResponse:
        fs = self.filterset
        team = getattr(fs.team, "slug", "team")
        stamp = timezone.localdate().isoformat()
        return csv_response(f"{team}-{fs.csv_name}-{stamp}.csv", fs.csv_columns, fs.csv_rows())


def listing(
    request: HttpRequest,
    filterset_class: type[ListFilterSet],
    queryset: QuerySet,
    *,
    per_page: int = 50,
    team: Any = None,
    data: QueryDict | None = None,
    unfiltered_count: int | None = None,
) -> Listing:
    """The list as `data` (the request's query unless given) asks for it. A caller that has
    already counted the whole, unfiltered list passes `unfiltered_count`: the pager then reads
    it instead of counting again, unless a filter narrows the list."""
    data = request.GET if data is None else data
    filterset = filterset_class(data, queryset=queryset, request=request, team=team)
    paginator = Paginator(filterset.results, per_page)
    if unfiltered_count is not None and filterset.is_valid() and not filterset.active:
        paginator.count = unfiltered_count  # a cached_property: set, it is never counted again
    page = paginator.get_page(data.get("page"))
    return Listing(filterset=filterset, page=page)


def wants_csv(request: HttpRequest) -> bool:
    return request.GET.get("export") == "csv"
