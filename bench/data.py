"""Generate the benchmarks' own data: a bundle file, an OpenMemories source, a git repository.

No Django here: the runner calls these before any measured process starts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import shutil
import subprocess
from array import array
from pathlib import Path

EMBEDDING_DIM = 384
EMBEDDING_MODEL = "bench-minilm-l6"
STAMP = "2026-01-01T00:00:00Z"
DNA_EVERY = 20  # one chunk in 20 is a decision (DNA)


def bundle_sizes(chunks: int) -> dict[str, int]:
    """The issue's shape: 100k chunks, 50k edges, 10k entities."""
    return {"chunks": chunks, "memory_edges": chunks // 2, "entities": max(1, chunks // 10)}


def _embeddings(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    vectors = []
    for _ in range(count):
        floats = array("f", (rng.uniform(-1.0, 1.0) for _ in range(EMBEDDING_DIM)))
        if floats.itemsize != 4:  # pragma: no cover - every platform we run on
            raise RuntimeError("float32 expected")
        vectors.append(base64.b64encode(floats.tobytes()).decode("ascii"))
    return vectors


def chunk_record(index: int, embedding: str) -> dict:
    content = f"Benchmark chunk {index}: the team decided on detail number {index * 7919 % 100003}."
    return {
        "id": index + 1,
        "content": content,
        "content_hash": hashlib.sha256(content.encode("utf-8")).hexdigest(),
        "memory_type": "decision" if index % DNA_EVERY == 0 else "fact",
        "embedding": embedding,
        "embedding_model": EMBEDDING_MODEL,
        "tags": ["bench", f"group-{index % 50}"],
        "zone": "standard",
        "importance": 0.5,
        "is_pinned": False,
        "decay_score": 1.0,
        "tier": "hot",
        "created_at": STAMP,
        "accessed_at": None,
        "valid_until": None,
        "metadata": {"n": index},
    }


def edge_record(index: int, chunks: int) -> dict:
    a = index % chunks
    b = (a + 1 + index // chunks) % chunks
    return {
        "chunk_a": a + 1,
        "chunk_b": b + 1,
        "edge_type": "related",
        "weight": 0.5,
        "co_activation_count": 1,
        "created_at": STAMP,
        "updated_at": STAMP,
    }


def entity_record(index: int) -> dict:
    return {
        "name": f"entity-{index}",
        "frequency": 3,
        "first_seen": STAMP,
        "last_seen": STAMP,
        "is_dna": index % DNA_EVERY == 0,
    }


def write_bundle(path: Path, chunks: int) -> dict[str, int]:
    """A MemoryAI bundle file written record by record (no checksum: a warning on import)."""
    sizes = bundle_sizes(chunks)
    vectors = _embeddings(min(chunks, 256))
    path.parent.mkdir(parents=True, exist_ok=True)
    head = {
        "format": "memoryai-bundle",
        "version": 1,
        "generator": "memoryadmin-bench",
        "exported_at": STAMP,
        "manifest": {
            "scope": "full",
            "embedding_model": EMBEDDING_MODEL,
            "embedding_dim": EMBEDDING_DIM,
            "counts": {
                "chunks": sizes["chunks"],
                "memory_edges": sizes["memory_edges"],
                "entities": sizes["entities"],
                "l2_sessions": 0,
                "mood_states": 0,
                "agents": 0,
            },
        },
    }
    sections = {
        "chunks": (chunk_record(i, vectors[i % len(vectors)]) for i in range(sizes["chunks"])),
        "memory_edges": (edge_record(i, chunks) for i in range(sizes["memory_edges"])),
        "entities": (entity_record(i) for i in range(sizes["entities"])),
    }
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(head)[:-1])
        for name, records in sections.items():
            out.write(f', "{name}": [')
            for n, record in enumerate(records):
                out.write(("," if n else "") + json.dumps(record, separators=(",", ":")))
            out.write("]")
        out.write(', "l2_sessions": [], "mood_states": [], "agents": []}')
    return sizes


# -- OpenMemories source ------------------------------------------------------------------------


def record_text(record_id: str, n: int) -> str:
    return (
        f"---\nopenmemories: '0.1'\nid: '{record_id}'\ntitle: 'Benchmark record {n}'\n"
        f"kind: 'fact'\nscope: 'user'\ncreated: '2026-01-01T00:00:00Z'\n"
        f"updated: '2026-01-02T00:00:00Z'\ntags:\n  - bench\n  - group-{n % 20}\n---\n\n"
        f"Record {n} says something worth remembering about subsystem {n % 97}.\n"
    )


def write_source(root: Path, records: int) -> list[Path]:
    if root.exists():
        shutil.rmtree(root)
    (root / "records").mkdir(parents=True)
    ids = [f"bench-{n:06d}" for n in range(records)]
    files = []
    for n, record_id in enumerate(ids):
        target = root / "records" / f"{record_id}.md"
        target.write_text(record_text(record_id, n), encoding="utf-8")
        files.append(target)
    manifest = {
        "openmemories": "0.1",
        "name": "Benchmark source",
        "memories": [{"id": i, "path": f"records/{i}.md"} for i in ids],
    }
    (root / "memories.json").write_text(json.dumps(manifest), encoding="utf-8")
    return files


# -- MemoryRail repository ----------------------------------------------------------------------

MEMORIES_DIR = ".memoryrail/memories"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench Agent",
    "GIT_AUTHOR_EMAIL": "agent@bench.invalid",
    "GIT_COMMITTER_NAME": "Bench Agent",
    "GIT_COMMITTER_EMAIL": "agent@bench.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def git(cwd: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def memory_text(memory_id: str, n: int, status: str) -> str:
    kind = ("decision", "constraint", "gotcha", "attempt")[n % 4]
    return (
        f'---\nid: "{memory_id}"\ntype: "{kind}"\ntitle: "Benchmark memory {n}"\n'
        f'status: "{status}"\ncreated: "2026-01-01T00:00:00.000Z"\n'
        f'updated: "2026-01-01T00:00:00.000Z"\n---\n'
        f"Memory {n} explains why subsystem {n % 97} works the way it does.\n"
    )


def proposal_paths(memories: int, proposals: int) -> list[str]:
    return [f"{MEMORIES_DIR}/{memory_id(n)}.md" for n in range(memories - proposals, memories)]


def memory_id(n: int) -> str:
    return f"2026{1 + n // 28 % 12:02d}{1 + n % 28:02d}-bench-memory-{n:05d}"


def write_repository(root: Path, memories: int, proposals: int) -> Path:
    """A bare remote (root/remote.git) holding `memories` files, the last `proposals` proposed."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    bare = root / "remote.git"
    seed = root / "seed"
    git(root, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    git(root, "init", "--quiet", "--initial-branch=main", str(seed))
    folder = seed / MEMORIES_DIR
    folder.mkdir(parents=True)
    (seed / ".memoryrail" / "config.json").write_text(
        json.dumps({"version": 1, "review": "agents"}) + "\n", encoding="utf-8"
    )
    for n in range(memories):
        status = "proposed" if n >= memories - proposals else "active"
        (folder / f"{memory_id(n)}.md").write_text(
            memory_text(memory_id(n), n, status), encoding="utf-8"
        )
    git(seed, "add", "-A")
    git(seed, "commit", "--quiet", "-m", f"{memories} memories")
    git(seed, "remote", "add", "origin", bare.as_uri())
    git(seed, "push", "--quiet", "origin", "main")
    # the seed stays (removed with the workdir): deleting its files here would make the next
    # timed step pay for the delete (bench.steps.helpers.kept_scratch)
    return bare
