"""The registered names of webhooks' queued tasks (services queue by name: memoryadmin.queue)."""

DELIVERY_ATTEMPT = "webhooks.tasks.deliver"
