from __future__ import annotations

from django.contrib import admin

from bundles.models import BrainSettings, Chunk, ImportJob
from memoryadmin.admin import ReadOnlyAdmin


@admin.register(BrainSettings)
class BrainSettingsAdmin(ReadOnlyAdmin):
    list_display = ("team", "embedding_model", "embedding_dim", "updated_at")


@admin.register(Chunk)
class ChunkAdmin(ReadOnlyAdmin):
    list_display = ("id", "team", "memory_type", "zone", "is_dna", "origin", "is_deleted")
    list_filter = ("team", "memory_type", "zone", "is_dna", "origin", "is_deleted")
    search_fields = ("content", "content_hash")
    readonly_fields = ("content_hash", "embedding", "is_dna")


@admin.register(ImportJob)
class ImportJobAdmin(ReadOnlyAdmin):
    list_display = ("id", "team", "state", "size_bytes", "created_at", "finished_at")
    list_filter = ("state", "team")
    readonly_fields = [f.name for f in ImportJob._meta.fields]
