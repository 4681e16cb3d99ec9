from __future__ import annotations

import json

from django.contrib import admin

from memoryadmin.admin import ReadOnlyAdmin
from reviews.models import Decision, DecisionItem, Memory, Repository
from reviews.services.content import masked_title, memory_text


@admin.register(Repository)
class RepositoryAdmin(ReadOnlyAdmin):
    list_display = ["name", "team", "branch", "last_sync_at", "last_sync_ok"]
    list_filter = ["team", "last_sync_ok"]
    exclude = ["credential_encrypted"]  # never shown back
    readonly_fields = ["head_commit", "last_error", "problems", "last_sync_at", "last_sync_ok"]


@admin.register(Memory)
class MemoryAdmin(ReadOnlyAdmin):
    """Titles, bodies and front matter with their secrets masked, as on the team pages."""

    list_display = ["ref", "shown_title", "type", "status", "repository"]
    list_filter = ["status", "type", "has_secret"]
    search_fields = ["memory_id", "ref"]
    exclude = ["title", "body", "front_matter"]
    readonly_fields = ["shown_title", "shown_body", "shown_front_matter"]

    @admin.display(description="title")
    def shown_title(self, memory: Memory) -> str:
        return masked_title(memory.title)

    @admin.display(description="body")
    def shown_body(self, memory: Memory) -> str:
        return memory_text(memory).body

    @admin.display(description="front matter")
    def shown_front_matter(self, memory: Memory) -> str:
        return json.dumps(memory_text(memory).front_matter, indent=2, ensure_ascii=False)


class DecisionItemInline(admin.TabularInline):
    model = DecisionItem
    extra = 0
    can_delete = False
    readonly_fields = ["memory_key", "ref", "shown_title", "path", "blob_sha", "supersedes"]
    exclude = ["memory", "title"]

    @admin.display(description="title")
    def shown_title(self, item: DecisionItem) -> str:
        return masked_title(item.title)  # rows from before titles were stored masked


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ["id", "kind", "repository", "actor_label", "state", "created_at"]
    list_filter = ["state", "kind"]
    inlines = [DecisionItemInline]
