from __future__ import annotations

from django.contrib import admin

from memoryadmin.admin import ReadOnlyAdmin
from sources.models import RefreshRun, Source


@admin.register(Source)
class SourceAdmin(ReadOnlyAdmin):
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


@admin.register(RefreshRun)
class RefreshRunAdmin(ReadOnlyAdmin):
    list_display = ["source", "status", "trigger", "requested_at", "duration_ms", "error_code"]
    list_filter = ["status", "trigger"]
