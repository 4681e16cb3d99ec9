"""Whether the server can search a team by meaning: its embedding model is the one we run."""

from __future__ import annotations

from bundles.embeddings import model as embedding_model
from bundles.models import BrainSettings
from memoryadmin.models import Team


def searchable_model(team: Team) -> tuple[str, int] | None:
    """(model, dim) when this server can embed queries for the team: its model is ours."""
    if not embedding_model.available():
        return None
    settings = BrainSettings.objects.filter(team=team).first()
    if settings is None or not settings.is_set:
        return None
    if not embedding_model.runs(settings.embedding_model):
        return None
    return settings.embedding_model, settings.embedding_dim
