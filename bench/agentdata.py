"""The agents benchmark's data: a brain bundle of varied engineering notes, a MemoryRail
repository of memories linking to source paths, and the queries and plans agents send.

No Django here (the runner writes these before any measured process starts). The text is built
from a seeded vocabulary, so words are shared the way a team's notes share them: a query word
matches hundreds to thousands of the 100k chunks, as it would in a real brain.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import data

SUBJECTS = (
    "uploader",
    "payments webhook",
    "auth service",
    "session store",
    "cache layer",
    "migration runner",
    "billing worker",
    "search index",
    "deploy pipeline",
    "feature flags",
    "rate limiter",
    "email sender",
    "image resizer",
    "audit log",
    "export job",
    "import parser",
    "postgres replica",
    "redis queue",
    "celery beat",
    "api gateway",
    "graphql schema",
    "mobile client",
    "admin dashboard",
    "metrics exporter",
    "backup script",
    "tenant router",
    "invoice renderer",
    "notification hub",
    "pdf generator",
    "oauth callback",
)
FACTS = (
    "retries failed requests with exponential backoff",
    "must stay idempotent because events arrive twice",
    "reads its settings from the environment only",
    "times out after thirty seconds behind the proxy",
    "holds a lock per tenant while it writes",
    "keeps a connection pool of ten per process",
    "logs every refusal with a machine-readable code",
    "drops messages larger than one megabyte",
    "runs in a transaction with the audit event",
    "batches writes in groups of five hundred rows",
    "needs the migration applied before the deploy",
    "streams its output instead of buffering it",
    "checks the signature before parsing the body",
    "caches lookups for sixty seconds",
    "is pinned to the previous major version",
    "validates input against the published schema",
    "fails closed when the upstream is down",
    "sorts results by score then by id",
    "uses a dedicated queue so it never starves",
    "writes temporary files under the data directory",
)
REASONS = (
    "after the outage in March",
    "because the vendor changed their limits",
    "so support can trace each failure",
    "to keep memory flat on large teams",
    "since the load test showed lock contention",
    "because customers retry on timeouts",
    "so a replay never double charges",
    "after a security review asked for it",
    "to keep the p95 under the budget",
    "because the old client sends stale tokens",
)
QUERIES = (
    "uploader retries",
    "payments webhook idempotent",
    "auth service token",
    "cache layer invalidation",
    '"connection pool"',
    "migration runner deploy",
    "billing worker lock",
    "search index score",
    "feature flags",
    "rate limiter proxy",
    "redis queue or celery beat",
    "export job streams -buffering",
    "postgres replica transaction",
    "oauth callback signature",
    "tenant router lock contention",
    "invoice renderer memory",
    "notification hub dedicated queue",
    "audit log machine-readable code",
    "api gateway timeout",
    "backup script temporary files",
)
PLANS = (
    "Add a retry to the uploader when the proxy times out",
    "Change the payments webhook handler to parse the body before checking the signature",
    "Move the session store settings into a config file",
    "Raise the cache layer lookup time to ten minutes",
    "Batch the billing worker writes in bigger groups",
    "Switch the redis queue to a shared queue with the email sender",
    "Let the export job buffer its output in memory",
    "Skip the migration before the next deploy",
    "Make the rate limiter fail open when redis is down",
    "Render invoices in the mobile client instead",
)
KINDS = ("constraint", "attempt", "gotcha", "decision")
PINNED_EVERY = 500  # 10 pinned constraints in 5k memories


def _slug(subject: str) -> str:
    return subject.replace(" ", "_")


def note_parts(rng: random.Random, n: int) -> tuple[str, str, list[tuple[str, float]]]:
    """A title and a body of two or three sentences about one subject, and the sentence parts
    its benchmark vector is composed of (text, weight)."""
    subject = SUBJECTS[n % len(SUBJECTS)]
    other = rng.choice(SUBJECTS)
    first, second, third = rng.choice(FACTS), rng.choice(FACTS), rng.choice(FACTS)
    reason = rng.choice(REASONS)
    title = f"The {subject} {first}"
    body = (
        f"The {subject} {second} {reason}. "
        f"It talks to the {other}, which {third}. "
        f"Ticket {n * 7919 % 100_003} has the details."
    )
    parts = [
        (title, 1.0),
        (f"The {subject} {second}", 0.8),
        (reason, 0.3),
        (f"The {other} {third}", 0.4),
    ]
    return title, body, parts


def note(rng: random.Random, n: int) -> tuple[str, str]:
    title, body, _ = note_parts(rng, n)
    return title, body


def chunk_contents(chunks: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return ["\n\n".join(note(rng, n)) for n in range(chunks)]


def vector_parts() -> list[str]:
    """Every sentence part a chunk's vector is composed of (610 short texts: the real model
    encodes them once, in the setup, instead of 100k whole chunks)."""
    parts = {f"The {subject} {fact}" for subject in SUBJECTS for fact in FACTS}
    return sorted(parts | set(REASONS))


def composed_vectors(chunks: int, part_vectors: dict[str, Any], seed: int = 11) -> Iterator[bytes]:
    """Each chunk's vector (float32 bytes, unit length): the weighted sum of the model's vectors
    of its sentence parts. Near the model's own vector of the whole chunk (same topic, same
    neighbours), and a search costs the same: HNSW's work depends on the data's dimension and
    spread, not on how each vector was made."""
    import numpy as np

    rng = random.Random(seed)
    for n in range(chunks):
        _, _, parts = note_parts(rng, n)
        vector = np.zeros(data.EMBEDDING_DIM, dtype=np.float64)
        for text, weight in parts:
            vector += weight * np.asarray(part_vectors[text], dtype=np.float64)
        yield (vector / np.linalg.norm(vector)).astype("<f4").tobytes()


def write_bundle(
    path: Path, chunks: int, *, model: str = "", part_vectors: dict[str, Any] | None = None
) -> int:
    """A MemoryAI bundle of `chunks` varied notes (the shape of data.write_bundle, no edges).

    With `part_vectors` (the real model's vectors of `vector_parts()`, named `model`), each
    chunk carries its composed vector in that model, so the import keeps them and the brain is
    searchable by meaning at once; else 16 random vectors of a model nobody runs (dropped)."""
    vectors = data._embeddings(16)
    composed = composed_vectors(chunks, part_vectors) if part_vectors else None
    path.parent.mkdir(parents=True, exist_ok=True)
    head = {
        "format": "memoryai-bundle",
        "version": 1,
        "generator": "memoryadmin-bench-agents",
        "exported_at": data.STAMP,
        "manifest": {
            "scope": "full",
            "embedding_model": model or data.EMBEDDING_MODEL,
            "embedding_dim": data.EMBEDDING_DIM,
            "counts": {"chunks": chunks},
        },
    }
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(head)[:-1] + ', "chunks": [')
        for n, content in enumerate(chunk_contents(chunks)):
            if composed is not None:
                record = data.chunk_record(n, base64.b64encode(next(composed)).decode("ascii"))
                record["embedding_model"] = model
            else:
                record = data.chunk_record(n, vectors[n % len(vectors)])
            record["content"] = content
            record["content_hash"] = hashlib.sha256(content.encode("utf-8")).hexdigest()
            record["memory_type"] = ("fact", "decision", "pitfall", "procedure")[n % 4]
            out.write(("," if n else "") + json.dumps(record, separators=(",", ":")))
        out.write('], "memory_edges": [], "entities": [], "l2_sessions": [], ')
        out.write('"mood_states": [], "agents": []}')
    return chunks


def memory_file(n: int, rng: random.Random) -> tuple[str, str]:
    """One active MemoryRail memory: a kind, a title and body, links to a directory or file."""
    memory_id = data.memory_id(n)
    kind = KINDS[n % len(KINDS)]
    title, body = note(rng, n)
    subject = _slug(SUBJECTS[n % len(SUBJECTS)])
    folder = f"src/{subject}/mod_{n % 10}"
    links = [folder] if n % 3 else [f"{folder}/handler_{n % 7}.py"]
    meta: dict[str, object] = {
        "id": memory_id,
        "type": kind,
        "title": title,
        "status": "active",
        "created": "2026-01-01T00:00:00.000Z",
        "updated": "2026-01-01T00:00:00.000Z",
        "links": links,
        "tags": [subject],
    }
    if kind == "constraint" and n % PINNED_EVERY == 0:
        meta["pinned"] = True
    lines = "".join(f"{key}: {json.dumps(value)}\n" for key, value in meta.items())
    return memory_id, f"---\n{lines}---\n{body}\n"


def write_repository(root: Path, memories: int, seed: int = 13) -> Path:
    """A bare remote (root/remote.git) of `memories` active memories."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    bare, seed_dir = root / "remote.git", root / "seed"
    data.git(root, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    data.git(root, "init", "--quiet", "--initial-branch=main", str(seed_dir))
    folder = seed_dir / data.MEMORIES_DIR
    folder.mkdir(parents=True)
    (seed_dir / ".memoryrail" / "config.json").write_text(
        json.dumps({"version": 1, "review": "agents"}) + "\n", encoding="utf-8"
    )
    rng = random.Random(seed)
    for n in range(memories):
        memory_id, text = memory_file(n, rng)
        (folder / f"{memory_id}.md").write_text(text, encoding="utf-8")
    data.git(seed_dir, "add", "-A")
    data.git(seed_dir, "commit", "--quiet", "-m", f"{memories} memories")
    data.git(seed_dir, "remote", "add", "origin", bare.as_uri())
    data.git(seed_dir, "push", "--quiet", "origin", "main")
    shutil.rmtree(seed_dir)
    return bare


def precheck_bodies() -> list[dict[str, object]]:
    """Plans with the paths they touch, and a few path-only and plan-only checks."""
    bodies: list[dict[str, object]] = []
    for n, plan in enumerate(PLANS):
        folder = f"src/{_slug(SUBJECTS[(n * 3) % len(SUBJECTS)])}/mod_{n % 10}"
        bodies.append({"plan": plan, "paths": [f"{folder}/handler_{n % 7}.py"]})
        bodies.append({"paths": [f"{folder}/models.py", f"{folder}/handler_1.py"]})
        bodies.append({"plan": plan})
    return bodies


def _significant(text: str) -> list[str]:
    return [w for w in text.replace(",", "").split() if len(w) > 3 and w not in _COMMON]


_COMMON = frozenset({"with", "because", "after", "before", "their", "every", "only", "then"})


def distinct_queries(count: int, *, seed: int) -> list[str]:
    """`count` different web-search queries in the notes' words (a subject and one or two
    words of what notes say about it; some with `or`), so that no two requests of a load ask
    the same thing: a per-process query cache never answers them."""
    rng = random.Random(seed)
    words = sorted({w for text in FACTS + REASONS for w in _significant(text)})
    found: dict[str, None] = {}
    limit = len(SUBJECTS) * len(words) * len(words)
    while len(found) < min(count, limit):
        subject = rng.choice(SUBJECTS)
        shape = rng.random()
        if shape < 0.4:
            query = f"{subject} {rng.choice(words)}"
        elif shape < 0.8:
            query = f"{subject} {rng.choice(words)} {rng.choice(words)}"
        else:
            query = f"{subject} {rng.choice(words)} or {rng.choice(words)}"
        found.setdefault(query, None)
    return list(found)
