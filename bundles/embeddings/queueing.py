"""Queue a team's embedding run (bundles.tasks.brain_embed) after the caller's transaction."""

from __future__ import annotations

from bundles import task_names
from bundles.embeddings import model as embedding_model
from memoryadmin.queue import enqueue_on_commit


def brain_embed_queue(*, team_id: int) -> None:
    """Queue the team's embedding run after the caller's transaction commits."""
    if embedding_model.available():
        enqueue_on_commit(task_names.BRAIN_EMBED, team_id)
