from __future__ import annotations

import csv
import json
from collections.abc import Iterator

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import unquote
from django.contrib.auth import admin as auth_admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db import router, transaction
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.urls import path
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_post_parameters

from memoryadmin.audit import Actor
from memoryadmin.listing import FORMULA_STARTS
from memoryadmin.models import ApiToken, AuditEvent, Membership, Team
from memoryadmin.services import (
    account_state,
    group_delete,
    group_record,
    group_state,
    teams_losing_every_admin,
    user_account_record,
    user_delete,
)


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


# ----------------------------------------------------------------------------- accounts
# Django's User and Group admin stay editable (operators manage accounts there), but every
# change lands in the append-only audit log in the admin's own transaction: its LogEntry history
# can be edited and deleted, and never saw passwords or group permissions change.

User = get_user_model()
admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class AuditedUserAdmin(auth_admin.UserAdmin):
    def save_model(self, request: HttpRequest, obj, form, change: bool) -> None:  # type: ignore[no-untyped-def]
        # Groups and permissions are saved after this (save_related): compare there.
        form.account_before = account_state(User.objects.get(pk=obj.pk)) if change else None
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form, formsets, change: bool) -> None:  # type: ignore[no-untyped-def]
        super().save_related(request, form, formsets, change)
        user_account_record(
            actor=Actor.from_request(request),
            user=form.instance,
            before=getattr(form, "account_before", None),
        )

    @method_decorator(sensitive_post_parameters())
    def user_change_password(self, request: HttpRequest, id: str, form_url: str = ""):  # type: ignore[no-untyped-def]
        """Django's password form, in one transaction with its audit event (set, changed or
        disabled: never the password)."""
        if request.method != "POST":
            return super().user_change_password(request, id, form_url)
        with transaction.atomic(using=router.db_for_write(User)):
            user = self.get_object(request, unquote(id))
            before = account_state(user) if user is not None else None
            response = super().user_change_password(request, id, form_url)
            if user is not None and before is not None:
                user.refresh_from_db()
                user_account_record(actor=Actor.from_request(request), user=user, before=before)
            return response

    def get_deleted_objects(self, objs, request: HttpRequest):  # type: ignore[no-untyped-def]
        """Listing a team that would lose its every admin as protected refuses the deletion."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        for team in teams_losing_every_admin(user.pk for user in objs):
            protected.append(
                f"Team {team.slug}: these users are its only admins (make someone else admin first)"
            )
        return deleted, counts, perms_needed, protected

    def delete_model(self, request: HttpRequest, obj) -> None:  # type: ignore[no-untyped-def]
        user_delete(actor=Actor.from_request(request), user=obj)

    def delete_queryset(self, request: HttpRequest, queryset) -> None:  # type: ignore[no-untyped-def]
        with transaction.atomic(using=router.db_for_write(User)):
            for user in queryset:
                user_delete(actor=Actor.from_request(request), user=user)


@admin.register(Group)
class AuditedGroupAdmin(auth_admin.GroupAdmin):
    def save_model(self, request: HttpRequest, obj, form, change: bool) -> None:  # type: ignore[no-untyped-def]
        form.group_before = group_state(Group.objects.get(pk=obj.pk)) if change else None
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form, formsets, change: bool) -> None:  # type: ignore[no-untyped-def]
        super().save_related(request, form, formsets, change)
        group_record(
            actor=Actor.from_request(request),
            group=form.instance,
            before=getattr(form, "group_before", None),
        )

    def delete_model(self, request: HttpRequest, obj) -> None:  # type: ignore[no-untyped-def]
        group_delete(actor=Actor.from_request(request), group=obj)

    def delete_queryset(self, request: HttpRequest, queryset) -> None:  # type: ignore[no-untyped-def]
        with transaction.atomic(using=router.db_for_write(Group)):
            for group in queryset:
                group_delete(actor=Actor.from_request(request), group=group)
