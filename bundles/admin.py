from __future__ import annotations

from django.contrib import admin

from bundles.models import BrainSettings, Chunk, ImportJob
from bundles.secrets import mask_secrets
from memoryadmin.admin import ReadOnlyAdmin


@admin.register(BrainSettings)
class BrainSettingsAdmin(ReadOnlyAdmin):
    list_display = ("team", "embedding_model", "embedding_dim", "updated_at")


@admin.register(Chunk)
class ChunkAdmin(ReadOnlyAdmin):
    list_display = ("id", "team", "memory_type", "zone", "is_dna", "origin", "is_deleted")
    list_filter = ("team", "memory_type", "zone", "is_dna", "origin", "is_deleted", "suspicious")
    search_fields = ("content", "content_hash")
    # The content is shown with what looked like a credential masked, never as stored.
    exclude = ("content",)
    readonly_fields = ("masked_content", "content_hash", "embedding", "is_dna", "secret_findings")

    @admin.display(description="content")
    def masked_content(self, obj: Chunk) -> str:
        return mask_secrets(obj.content, obj.secret_findings)


@admin.register(ImportJob)
class ImportJobAdmin(ReadOnlyAdmin):
    list_display = ("id", "team", "state", "size_bytes", "created_at", "finished_at")
    list_filter = ("state", "team")
    readonly_fields = [f.name for f in ImportJob._meta.fields]
