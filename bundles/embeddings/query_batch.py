"""Query encodings that arrive together in one web process are encoded together.

A web process serves several request threads; each hybrid search encodes one short query.
Encoded one by one, each forward pass pays torch's fixed cost per call (tokenizer, kernel
dispatch for every layer) for a batch of one, and concurrent passes compete for the same cores.
Here the first request to arrive encodes at once (no waiting when it is alone); the requests
that arrive while a pass runs queue, and the next free request thread encodes all of them in
one pass (at most model.ENCODE_BATCH), so under load each query's CPU shrinks instead of the
queue growing. A request never waits for a timer: only for the pass that holds its query.

The vectors are the model's own (the same call as model.encode, on a batch): a short query
padded in a batch gets the vector it gets alone, up to float rounding
(tests/semantic/test_query_batch.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


@dataclass
class _Query:
    text: str
    vector: Any = None
    error: BaseException | None = None
    done: bool = False


@dataclass
class QueryBatcher:
    """Encodes the queries of the threads that call `encode` at the same time in shared
    passes of `encode_batch` (a list of texts -> their vectors, in order)."""

    encode_batch: Any
    max_batch: int = 32
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _queue: list[_Query] = field(default_factory=list)
    _busy: bool = False
    passes: int = 0  # forward passes run (for the tests and the bench)

    def encode(self, text: str) -> np.ndarray:
        query = _Query(text)
        with self._cond:
            self._queue.append(query)
            while not query.done:
                if self._busy:
                    self._cond.wait()
                    continue
                # No pass runs: this thread runs the next one, for everyone queued.
                self._busy = True
                batch = self._queue[: self.max_batch]
                del self._queue[: self.max_batch]
                self._cond.release()
                try:
                    self._run(batch)
                finally:
                    self._cond.acquire()
                    self._busy = False
                    self._cond.notify_all()
        if query.error is not None:
            raise query.error
        return query.vector

    def _run(self, batch: list[_Query]) -> None:
        try:
            vectors = self.encode_batch([q.text for q in batch])
        except BaseException as exc:  # every query of the pass sees the failure
            for query in batch:
                query.error, query.done = exc, True
            return
        self.passes += 1
        for query, vector in zip(batch, vectors, strict=True):
            query.vector, query.done = vector, True
