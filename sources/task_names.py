"""The registered names of sources' queued tasks (services queue by name: memoryadmin.queue)."""

SOURCE_REFRESH = "sources.tasks.refresh_source"
