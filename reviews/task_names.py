"""The registered names of reviews' queued tasks (services queue by name: memoryadmin.queue)."""

REPOSITORY_SYNC = "reviews.tasks.sync_repository"
REPOSITORY_PUSH_PENDING = "reviews.tasks.push_repository"
