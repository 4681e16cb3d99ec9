from __future__ import annotations

import csv
import json
from collections.abc import Iterator

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.urls import path

from memoryadmin.models import ApiToken, AuditEvent, Membership, Team


class ReadOnlyAdmin(admin.ModelAdmin):
    """The Django admin is a window, not a door: every change goes through a service (and its
    audit event) on the team pages or the management commands, never a raw admin form."""

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    fields = ["user", "role", "created_at"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False


@admin.register(Team)
class TeamAdmin(ReadOnlyAdmin):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    list_display = [
        "name",
        "team",
        "prefix",
        "scopes",
        "created_at",
        "expires_at",
        "revoked_at",
        "last_used_at",
    ]
    list_filter = ["team"]
    search_fields = ["name", "prefix"]
    # The hash is not a secret, but nothing here needs it; tokens are made on the tokens page.
    exclude = ["secret_hash"]
    readonly_fields = [
        "team",
        "name",
        "prefix",
        "scopes",
        "created_by",
        "created_at",
        "expires_at",
        "revoked_at",
        "revoked_by",
        "last_used_at",
    ]


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: str) -> str:
    """Audit text is user-controlled: a leading quote stops spreadsheets running it as a formula."""
    return "'" + value if value.startswith(FORMULA_STARTS) else value


class _Echo:
    def write(self, value: str) -> str:
        return value


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "team",
        "actor_label",
        "action",
        "target_type",
        "target_id",
        "summary",
    ]
    list_filter = ["team", "action", "created_at", ("actor_user", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["summary", "actor_label", "action", "target_id"]
    date_hierarchy = "created_at"
    list_select_related = ["team"]
    change_list_template = "admin/memoryadmin/auditevent/change_list.html"
    readonly_fields = [f.name for f in AuditEvent._meta.fields]

    def get_urls(self):  # type: ignore[no-untyped-def]
        export = self.admin_site.admin_view(self.export_csv)
        return [
            path("export.csv", export, name="memoryadmin_auditevent_export"),
            *super().get_urls(),
        ]

    def export_csv(self, request: HttpRequest) -> HttpResponse:
        """The list exactly as filtered and searched on the page, streamed as CSV."""
        # admin_view only checks is_staff; the export shows what the list shows, so ask the same.
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            changelist = self.get_changelist_instance(request)
        except IncorrectLookupParameters:
            return HttpResponseBadRequest("Unknown or invalid filter.", content_type="text/plain")
        rows = changelist.get_queryset(request).select_related("team").iterator(chunk_size=2000)
        writer = csv.writer(_Echo())
        header = [
            "time",
            "team",
            "actor",
            "action",
            "target_type",
            "target_id",
            "summary",
            "ip_address",
            "request_id",
            "data",
        ]

        def lines() -> Iterator[str]:
            yield writer.writerow(header)
            for event in rows:
                yield writer.writerow(
                    [
                        _cell(value)
                        for value in (
                            event.created_at.isoformat(),
                            event.team.slug if event.team else "",
                            event.actor_label,
                            event.action,
                            event.target_type,
                            event.target_id,
                            event.summary,
                            event.ip_address or "",
                            event.request_id,
                            json.dumps(event.data, sort_keys=True),
                        )
                    ]
                )

        response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="audit-events.csv"'
        return response
