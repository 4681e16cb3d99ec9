from __future__ import annotations

from django.contrib import admin

from sources.models import RefreshRun, Source


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    list_display = ["identity", "team", "kind", "state", "health", "last_success_at"]
    list_filter = ["state", "health", "kind", "team"]
    search_fields = ["identity", "display_name"]
    exclude = ["credential_encrypted"]  # never shown back
    readonly_fields = [
        "team",
        "kind",
        "identity",
        "display_name",
        "state",
        "approved_by",
        "approved_at",
        "health",
        "last_attempt_at",
        "last_success_at",
        "last_error_code",
        "last_error",
        "stale_since",
        "denied_since",
        "current_snapshot",
        "added_by",
        "credential_kind",
    ]

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False  # sources are added through the team page, which audits and previews


@admin.register(RefreshRun)
class RefreshRunAdmin(admin.ModelAdmin):
    list_display = ["source", "status", "trigger", "requested_at", "duration_ms", "error_code"]
    list_filter = ["status", "trigger"]

    def has_add_permission(self, request) -> bool:  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return False
