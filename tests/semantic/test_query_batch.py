"""Concurrent query encodings share a forward pass (bundles.embeddings.query_batch), and a
query encoded in a batch gets the model's own vector for it (the real model)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from bundles.embeddings import model as embedding_model
from bundles.embeddings.query_batch import QueryBatcher

QUERIES = [
    "which ORM do we use?",
    "how are releases shipped",
    "where do credentials live",
    "tabs or spaces in python files",
    "what broke the last deploy and why did the rollback take so long",
]


def _until(predicate, what: str) -> None:  # type: ignore[no-untyped-def]
    """Wait (bounded) for the other threads to reach the queue: a rendezvous, not a timing."""
    deadline = threading.Event()
    for _ in range(6000):
        if predicate():
            return
        deadline.wait(0.005)
    raise AssertionError(f"never happened: {what}")


def test_queries_asked_while_a_pass_runs_are_encoded_in_the_next_pass_together(loaded_model):
    release = threading.Event()
    calls: list[list[str]] = []

    def encode_batch(texts: list[str]) -> list[np.ndarray]:
        calls.append(list(texts))
        if len(calls) == 1:
            release.wait(60)  # hold the first pass until the others have queued
        return [row.copy() for row in embedding_model.encode(texts)]

    batcher = QueryBatcher(encode_batch=encode_batch, max_batch=32)
    results: dict[str, np.ndarray] = {}

    def ask(text: str) -> None:
        results[text] = batcher.encode(text)

    first = threading.Thread(target=ask, args=(QUERIES[0],))
    first.start()
    _until(lambda: len(calls) == 1, "the first pass started")
    others = [threading.Thread(target=ask, args=(q,)) for q in QUERIES[1:]]
    for thread in others:
        thread.start()
    _until(lambda: len(batcher._queue) == len(QUERIES) - 1, "the others queued")
    release.set()
    for thread in [first, *others]:
        thread.join(60)
    assert calls == [QUERIES[:1], QUERIES[1:]]  # two passes for five queries
    assert batcher.passes == 2
    alone = {text: embedding_model.encode([text])[0] for text in QUERIES}
    for text in QUERIES:  # padded in a batch, each query keeps its own vector
        assert float(np.abs(results[text] - alone[text]).max()) < 1e-5, text


def test_a_failed_pass_fails_every_query_in_it_and_the_next_pass_runs():
    def encode_batch(texts: list[str]) -> list[np.ndarray]:
        if "boom" in texts:
            raise RuntimeError("model failed")
        return [np.ones(3, dtype=np.float32) for _ in texts]

    batcher = QueryBatcher(encode_batch=encode_batch)
    with pytest.raises(RuntimeError, match="model failed"):
        batcher.encode("boom")
    assert batcher.encode("fine").tolist() == [1.0, 1.0, 1.0]


def test_encode_one_goes_through_the_process_batcher(loaded_model, settings):
    settings.SEMANTIC_QUERY_CACHE = 0
    before = embedding_model._batcher.passes
    vector = embedding_model.encode_one("which ORM do we use?")
    assert embedding_model._batcher.passes == before + 1
    assert vector.shape == (embedding_model.MODEL_DIM,)
    assert vector.base is None  # its own row, not a view of the batch
