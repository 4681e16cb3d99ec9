"""The meaning signal of search_memory: nearest vectors of the team's model (issue #16).

The query is the caller's text encoded by the model we run, or a vector the caller sends in
the team's model (its length the team's dimension, finite numbers, not all zero). Its hits are
fused with the keyword signal by bundles.agents.ranking.fuse (reciprocal rank fusion).
"""

from __future__ import annotations

import math
from typing import Any

from django.db.models import QuerySet

from bundles.agents.errors import AgentError
from bundles.agents.ranking import Hit
from bundles.embeddings import model as embedding_model
from bundles.embeddings import store
from bundles.embeddings.team_model import searchable_model
from bundles.models import BrainSettings, Chunk
from memoryadmin.models import Team

# Below this cosine similarity a chunk is not "about" the query: it stays out of the meaning
# list (a keyword hit still counts). Tuned on bench/semantic_eval.json.
MEANING_FLOOR = 0.3
CANDIDATES = 50  # how deep each signal's list goes before fusion


def clean_vector(team: Team, value: Any) -> list[float] | None:
    """The caller's query vector, checked against the team's model (codes: vector-invalid,
    vector-dimension, vector-model-unset)."""
    if value is None:
        return None
    if not embedding_model.available():
        raise AgentError(
            409, "vector-unavailable", "This server runs keyword search only: send a text query."
        )
    if not isinstance(value, list) or not value:
        raise AgentError(400, "vector-invalid", "vector is a non-empty list of numbers.")
    settings = BrainSettings.objects.filter(team=team).first()
    if settings is None or not settings.is_set:
        raise AgentError(
            409, "vector-model-unset", "The team has no embedding model yet: send a text query."
        )
    if len(value) != settings.embedding_dim:
        raise AgentError(
            400,
            "vector-dimension",
            f"vector has {len(value)} numbers; the team's model {settings.embedding_model} "
            f"has {settings.embedding_dim}.",
            {"expected": settings.embedding_dim, "got": len(value)},
        )
    numbers: list[float] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int | float):
            raise AgentError(400, "vector-invalid", "vector holds numbers only.")
        number = float(item)
        if not math.isfinite(number):
            raise AgentError(400, "vector-invalid", "vector holds finite numbers only.")
        numbers.append(number)
    if not any(numbers):
        raise AgentError(400, "vector-invalid", "vector must not be all zeros.")
    return numbers


def parse_vector_text(value: Any) -> Any:
    """A REST query parameter `vector=0.1,0.2,...` as a list (numbers checked by clean_vector)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        return value
    try:
        return [float(part) for part in value.split(",")]
    except ValueError:
        raise AgentError(400, "vector-invalid", "vector is comma-separated numbers.") from None


def meaning_hits(
    team: Team, chunks: QuerySet[Chunk], *, text: str, vector: list[float] | None, limit: int
) -> tuple[list[Hit], str]:
    """(hits, why-not): the nearest chunks above MEANING_FLOOR, best first; why-not says why
    the signal is off ("" when it ran)."""
    model_dim = searchable_model(team)
    if model_dim is None:
        return [], _why_not(team)
    import numpy as np  # the semantic extra's: only past the check that it is installed and on

    model, dim = model_dim
    if vector is not None:
        query = np.asarray(vector, dtype=np.float32)
    elif text:
        query = embedding_model.encode_one(text)
    else:
        return [], "no query"
    neighbours = store.nearest(chunks, query, model=model, dim=dim, limit=limit)
    hits = [n for n in neighbours if n.similarity >= MEANING_FLOOR]
    return [Hit(chunk_id=n.chunk_id, score=n.similarity, rank=i) for i, n in enumerate(hits, 1)], ""


def _why_not(team: Team) -> str:
    if not embedding_model.installed():
        return "semantic search is not installed on this server"
    if not embedding_model.available():
        return "semantic search is switched off on this server"
    settings = BrainSettings.objects.filter(team=team).first()
    if settings is None or not settings.is_set:
        return "the team's brain has no embeddings yet"
    return f"the team's embedding model {settings.embedding_model} does not run on this server"
