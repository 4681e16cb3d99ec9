"""Baselines at the physical limit: the cheapest honest way this machine does the same work.

- refresh and index: read the same files and let libyaml's C parser (PyYAML's CParser) turn
  their front matter into events, with no checks and nothing built from them;
- re-import of a bundle whose chunks are all held: orjson's parse of the file (the streamed
  reader's above 256 MiB, for flat memory at 1M chunks), its SHA-256,
  one look-up of every content hash, and the upsert of its edges and entities (COPY into a
  scratch table, one INSERT … ON CONFLICT DO UPDATE each) — the work §3.8 cannot skip — rolled
  back afterwards.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from bench.steps.helpers import _team, kept_scratch
from bench.steps.measure import Probe


def _c_parse(data: bytes) -> int:
    """libyaml's events of the front matter of one file; the number of events."""
    from yaml._yaml import CParser

    text = data.decode("utf-8")
    end = text.find("\n---", 3)
    parser = CParser(text[4 : end + 1])
    count = 0
    try:
        while parser.check_event():
            parser.get_event()
            count += 1
    finally:
        parser.dispose()
    return count


def _best_of_two(probe: Probe, work: Any) -> Any:
    """The faster of two timed runs of `work` (a baseline: the least this machine needs)."""
    with probe():
        result = work()
    first = probe.seconds, probe.rss_growth_mb, probe.cpu_seconds
    with probe():
        work()
    best = min(first, (probe.seconds, probe.rss_growth_mb, probe.cpu_seconds), key=lambda m: m[0])
    probe.seconds, probe.rss_growth_mb, probe.cpu_seconds = best
    return result


def source_c_baseline(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """Read the manifest and every record file; libyaml's event parse of each front matter."""
    import orjson

    root = Path(args["path"])

    def work() -> int:
        manifest = orjson.loads((root / "memories.json").read_bytes())
        for entry in manifest["memories"]:
            _c_parse((root / entry["path"]).read_bytes())
        return len(manifest["memories"])

    return {"records": _best_of_two(probe, work)}


def index_c_baseline(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """git clone of the remote; libyaml's event parse of every memory's front matter."""
    scratch = kept_scratch("clone-c-")
    clones = iter(("one", "two"))

    def work() -> int:
        target = scratch / next(clones)
        subprocess.run(["git", "clone", "--quiet", args["remote_url"], str(target)], check=True)
        count = 0
        for path in sorted((target / ".memoryrail" / "memories").glob("*.md")):
            _c_parse(path.read_bytes())
            count += 1
        return count

    return {"memories": _best_of_two(probe, work)}


EDGE_UPSERT = (
    "INSERT INTO bundles_memoryedge (team_id, source_id, target_id, edge_type, weight, "
    "co_activation_count, created_at, updated_at) SELECT * FROM bench_edges "
    "ON CONFLICT (team_id, source_id, target_id, edge_type) DO UPDATE SET "
    "co_activation_count = bundles_memoryedge.co_activation_count + "
    "excluded.co_activation_count, weight = GREATEST(bundles_memoryedge.weight, excluded.weight), "
    "updated_at = excluded.updated_at"
)
ENTITY_UPSERT = (
    "INSERT INTO bundles_entity (team_id, name, frequency, first_seen, last_seen, is_dna, "
    "updated_at) SELECT * FROM bench_entities ON CONFLICT (team_id, name) DO UPDATE SET "
    "frequency = bundles_entity.frequency + excluded.frequency, "
    "first_seen = LEAST(bundles_entity.first_seen, excluded.first_seen), "
    "last_seen = GREATEST(bundles_entity.last_seen, excluded.last_seen), "
    "is_dna = bundles_entity.is_dna OR excluded.is_dna, updated_at = excluded.updated_at"
)


# Above this size the re-import baseline reads the file with the project's streamed reader
# (flat memory, as at 1M chunks) instead of one orjson parse of the whole file.
STREAM_ABOVE = 256 << 20
SECTIONS = ("chunks", "memory_edges", "entities")


def _sections(path: Path) -> Iterator[tuple[str, Iterable[dict[str, Any]]]]:
    """(section, records) in the file's order."""
    if path.stat().st_size <= STREAM_ABOVE:
        import orjson

        bundle = orjson.loads(path.read_bytes())
        for key in bundle:
            if key in SECTIONS:
                yield key, bundle[key]
        return
    from formats.memoryai.reader import BundleFile

    with path.open("rb") as stream:
        for key, is_array, records in BundleFile(stream, set(SECTIONS)).items():
            if is_array and key in SECTIONS:
                yield key, records


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def reimport_baseline(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """The irreducible work of re-importing `path` into `team`, which holds all its chunks."""
    from django.db import connection, transaction

    if connection.vendor != "postgresql":  # SQLite: no COPY; the parse and look-up only
        return _reimport_plain(args, probe)
    team_id = _team(args["team"]).pk
    path = Path(args["path"])
    ids: dict[Any, int | None] | None = None
    with transaction.atomic(), connection.cursor() as cursor, probe():
        _sha256_file(path)
        for key, records in _sections(path):
            if key == "chunks":
                # the true hash of every chunk (a declared one is not trusted), one look-up
                sha256 = hashlib.sha256
                hashes = {c["id"]: sha256(c["content"].encode()).hexdigest() for c in records}
                cursor.execute(
                    "SELECT content_hash, id FROM bundles_chunk WHERE team_id = %s "
                    "AND content_hash = ANY(%s::text[])",
                    [team_id, list(set(hashes.values()))],
                )
                held = dict(cursor.fetchall())
                ids = {bundle_id: held.get(digest) for bundle_id, digest in hashes.items()}
            elif key == "memory_edges":
                if ids is None:
                    raise RuntimeError("the baseline needs the chunks before the edges")
                cursor.execute(
                    "CREATE TEMP TABLE bench_edges ON COMMIT DROP AS SELECT team_id, source_id, "
                    "target_id, edge_type, weight, co_activation_count, created_at, updated_at "
                    "FROM bundles_memoryedge WITH NO DATA"
                )
                with cursor.cursor.copy("COPY bench_edges FROM STDIN") as copy:
                    for e in records:
                        ends = (ids[e["chunk_a"]], ids[e["chunk_b"]])
                        edge = (e["edge_type"], e["weight"], e["co_activation_count"])
                        copy.write_row((team_id, *ends, *edge, e["created_at"], e["updated_at"]))
                cursor.execute(EDGE_UPSERT)
            else:
                cursor.execute(
                    "CREATE TEMP TABLE bench_entities ON COMMIT DROP AS SELECT team_id, name, "
                    "frequency, first_seen, last_seen, is_dna, updated_at FROM bundles_entity "
                    "WITH NO DATA"
                )
                with cursor.cursor.copy("COPY bench_entities FROM STDIN") as copy:
                    for e in records:
                        first_seen, last_seen = e["first_seen"], e["last_seen"]
                        row = (team_id, e["name"], e["frequency"], first_seen, last_seen)
                        copy.write_row((*row, e["is_dna"], last_seen))
                cursor.execute(ENTITY_UPSERT)
        transaction.set_rollback(True)  # measured, not kept
    return {"chunks": len(ids or {})}


def _reimport_plain(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    from bundles.models import Chunk

    team = _team(args["team"])
    with probe():
        data = Path(args["path"]).read_bytes()
        hashlib.sha256(data).hexdigest()
        bundle = json.loads(data)
        hashes = [c["content_hash"] for c in bundle["chunks"]]
        held = set(
            Chunk.objects.filter(team=team, content_hash__in=hashes).values_list(
                "content_hash", flat=True
            )
        )
    return {"chunks": len(hashes), "held": len(held)}


def parse_compare(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """The strict reader against libyaml's event parse, on the same files read into memory:
    seconds per file for each, the best of five passes taken in turns (so a busy moment of the
    machine falls on both), nothing else timed."""
    import time

    from formats import frontmatter

    files = [path.read_bytes() for path in sorted(Path(args["path"]).rglob("*.md"))]
    parsers = {"strict": frontmatter.parse, "events": _c_parse}
    best = dict.fromkeys(parsers, float("inf"))
    for _ in range(5):
        for name, parse in parsers.items():
            start = time.perf_counter()
            for data in files:
                parse(data)
            best[name] = min(best[name], (time.perf_counter() - start) / len(files))
    return {"files": len(files), **best}
