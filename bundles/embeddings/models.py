"""Proposal vectors (re-exported by bundles.models, so Django sees them as the brain's)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from formats import memoryai as protocol
from memoryadmin.models import Team


class ProposalVector(models.Model):
    """A MemoryRail proposal's vector of the team's model, computed by the worker's embedding
    run (bundles.embeddings.lifecycle) so a reviewer's page only runs the nearest-neighbour
    query and never loads the model. `blob_sha` is the proposal file's git blob when it was
    embedded: a proposal whose file changed since is embedded again."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    memory = models.OneToOneField(
        "reviews.Memory", on_delete=models.CASCADE, related_name="brain_vector"
    )
    blob_sha = models.CharField(max_length=40)
    embedding = models.BinaryField()  # little-endian float32, like Chunk.embedding
    embedding_model = models.CharField(max_length=protocol.MAX_MODEL_CHARS)
    embedding_dim = models.PositiveIntegerField()
    embedded_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"proposal {self.memory_id}: {self.embedding_model}/{self.embedding_dim}"
