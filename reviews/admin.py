from __future__ import annotations

from django.contrib import admin

from memoryadmin.admin import ReadOnlyAdmin
from reviews.models import Decision, DecisionItem, Memory, Repository


@admin.register(Repository)
class RepositoryAdmin(ReadOnlyAdmin):
    list_display = ["name", "team", "branch", "last_sync_at", "last_sync_ok"]
    list_filter = ["team", "last_sync_ok"]
    exclude = ["credential_encrypted"]  # never shown back
    readonly_fields = ["head_commit", "last_error", "problems", "last_sync_at", "last_sync_ok"]


@admin.register(Memory)
class MemoryAdmin(ReadOnlyAdmin):
    list_display = ["ref", "title", "type", "status", "repository"]
    list_filter = ["status", "type", "has_secret"]
    search_fields = ["memory_id", "ref", "title"]


class DecisionItemInline(admin.TabularInline):
    model = DecisionItem
    extra = 0
    can_delete = False
    readonly_fields = ["memory_key", "ref", "title", "path", "blob_sha", "supersedes"]
    exclude = ["memory"]


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ["id", "kind", "repository", "actor_label", "state", "created_at"]
    list_filter = ["state", "kind"]
    inlines = [DecisionItemInline]
