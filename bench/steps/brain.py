"""Brain steps: import and export, and their COPY baselines."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.steps.helpers import _team
from bench.steps.measure import Probe
from bench.steps.sources import embedding_deferred

# -- brain: import and export ---------------------------------------------------------------


def brain_import(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """Import the bundle with the team's embedding run deferred, as in the refresh step: the
    bench runs tasks eagerly, so the run the import queues on commit would embed every chunk
    the team's model does not take from the bundle inside the timed section (100,000 chunks:
    4,435 s in one run); a worker does that afterwards (the semantic bench's row)."""
    from bundles.imports import bundle_import_file
    from memoryadmin.audit import Actor

    team = _team(args["team"])
    with embedding_deferred(), probe():
        result = bundle_import_file(team=team, actor=Actor.system(), path=Path(args["path"]))
    report = result["report"]
    return {"chunks": report["chunks"], "edges": report["memory_edges"]}


def brain_export(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """Through the real API view, as a client would ask for it; the body is counted, not kept."""
    from rest_framework.test import APIClient

    from memoryadmin.audit import Actor
    from memoryadmin.tokens import token_create

    team = _team(args["team"])
    _, secret = token_create(
        actor=Actor.system(), team=team, name=f"bench-{time.time_ns()}", scopes=["bundles:export"]
    )
    client = APIClient(HTTP_HOST="127.0.0.1")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    path = "/v1/brain/export/stream" if args["kind"] == "ndjson" else "/v1/brain/export"
    # A running server has its URLconf (every app's views) imported already; a fresh process
    # would spend ~0.3 s of the timed section importing it on the first request.
    from django.urls import get_resolver

    get_resolver().resolve(path)
    size = 0
    with probe():
        response = client.post(path, {"scope": "full"}, format="json")
        if response.status_code != 200:
            raise RuntimeError(f"export answered {response.status_code}")
        if response.streaming:
            for part in response.streaming_content:
                size += len(part)
        else:
            size = len(response.content)
        response.close()
    return {"bytes": size}


def brain_csv(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """The Brain page's CSV download of every chunk, through the real view and its streaming;
    the body is counted, not kept."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import get_resolver

    from bench.steps.helpers import _user

    slug = args["team"]
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(_user("bench-csv", [slug], role="viewer"))
    path = f"/t/{slug}/brain/"
    get_resolver().resolve(path)  # the URLconf is imported in a running server
    size = lines = 0
    with probe(), CaptureQueriesContext(connection) as queries:
        response = client.get(path, {"export": "csv"})
        if response.status_code != 200:
            raise RuntimeError(f"CSV export answered {response.status_code}")
        for part in response.streaming_content:
            size += len(part)
            lines += part.count(b"\n")
        response.close()
    return {"bytes": size, "rows": lines - 1, "queries": len(queries.captured_queries)}


def brain_export_file(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """Write the team's JSON export to a file (setup for importing our own export: untimed)."""
    from bundles.services.exports import ExportRequest, bundle_export_json
    from memoryadmin.audit import Actor

    team = _team(args["team"])
    with Path(args["path"]).open("wb") as out:
        for part in bundle_export_json(
            team=team, actor=Actor.system(), request=ExportRequest(scope="full")
        ):
            out.write(part)
    return {"bytes": Path(args["path"]).stat().st_size}


EXPORT_QUERIES = {
    "bundles_chunk": (
        "SELECT id, content, content_hash, memory_type, embedding, embedding_model, "
        "embedding_dim, tags, zone, importance, is_pinned, decay_score, tier, created_at, "
        "accessed_at, valid_until, metadata FROM bundles_chunk "
        "WHERE team_id = {team} AND NOT is_deleted ORDER BY id"
    ),
    "bundles_memoryedge": (
        "SELECT source_id, target_id, edge_type, weight, co_activation_count, created_at, "
        "updated_at FROM bundles_memoryedge WHERE team_id = {team} ORDER BY id"
    ),
    "bundles_entity": (
        "SELECT name, frequency, first_seen, last_seen, is_dna FROM bundles_entity "
        "WHERE team_id = {team} ORDER BY id"
    ),
}


def export_baseline(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """PostgreSQL's own COPY (SELECT …) TO STDOUT of the rows the export sends."""
    from django.db import connection

    team = _team(args["team"])
    size = 0
    with probe(), connection.cursor() as cursor:
        for query in EXPORT_QUERIES.values():
            sql = query.format(team=int(team.pk))
            if connection.vendor == "postgresql":
                with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT") as copy:
                    for block in copy:
                        size += len(block)
            else:  # SQLite has no COPY: a plain read of the same rows
                cursor.execute(sql)
                while rows := cursor.fetchmany(2000):
                    size += len(rows)
    return {"bytes": size}


def _copy_text(value: Any) -> str:
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, bytes):
        return "\\\\x" + value.hex()
    if isinstance(value, dict | list):
        value = json.dumps(value)
    text = str(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _chunk_columns(c: dict[str, Any], team_id: int) -> dict[str, Any]:
    import base64

    embedding = base64.b64decode(c["embedding"])
    return {
        "team_id": team_id,
        "content": c["content"],
        "content_hash": c["content_hash"],
        "memory_type": c["memory_type"],
        "embedding": embedding,
        "embedding_model": c["embedding_model"],
        "embedding_dim": len(embedding) // 4,
        "tags": c["tags"],
        "zone": c["zone"],
        "importance": c["importance"],
        "is_pinned": c["is_pinned"],
        "decay_score": c["decay_score"],
        "tier": c["tier"],
        "created_at": c["created_at"],
        "accessed_at": None,
        "valid_until": None,
        "metadata": c["metadata"],
        "origin": "import",
        "is_dna": c["memory_type"] == "decision",
        "is_deleted": False,
        "deleted_at": None,
        "suspicious": False,
        "updated_at": c["created_at"],
        "standalone": True,
    }


def _chunk_baseline_columns() -> tuple[str, ...]:
    """The columns the import writes that the baseline knows how to fill (the import's list
    grows as the app does; a column the baseline does not know is left empty)."""
    from bundles.imports.chunks import CHUNK_INSERT_COLUMNS

    known = _chunk_columns(
        {
            "embedding": "",
            "tags": [],
            "metadata": {},
            **dict.fromkeys(
                (
                    "content",
                    "content_hash",
                    "memory_type",
                    "embedding_model",
                    "zone",
                    "importance",
                    "is_pinned",
                    "decay_score",
                    "tier",
                    "created_at",
                )
            ),
        },
        0,
    )
    return tuple(name for name in CHUNK_INSERT_COLUMNS if name in known)


def _baseline_rows(path: Path, team_id: int) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """(table name, row) for every row the import would write, streamed from the file (the
    project's one-pass reader: memory stays flat at 1M chunks). Untimed preparation."""
    from formats.memoryai.reader import BundleFile

    columns = _chunk_baseline_columns()
    names = {"chunks": "chunk", "memory_edges": "edge", "entities": "entity"}
    with path.open("rb") as stream:
        for key, is_array, records in BundleFile(stream, set(names)).items():
            if not is_array or key not in names:
                continue
            for r in records:
                if key == "chunks":
                    chunk = _chunk_columns(r, team_id)
                    yield "chunk", tuple(chunk.get(name) for name in columns)
                elif key == "memory_edges":
                    edge = (r["chunk_a"], r["chunk_b"], r["edge_type"], r["weight"])
                    times = (r["co_activation_count"], r["created_at"], r["updated_at"])
                    yield "edge", (team_id, *edge, *times)
                else:
                    entity = (r["name"], r["frequency"], r["first_seen"], r["last_seen"])
                    yield "entity", (team_id, *entity, r["is_dna"], STAMP)


STAMP = "2026-01-01T00:00:00Z"


def import_baseline(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """COPY … FROM STDIN of the same rows into scratch tables shaped like the real ones."""
    from django.db import connection

    from bundles.imports.sections import EDGE_COLUMNS, ENTITY_COLUMNS

    columns = {
        "chunk": ("bundles_chunk", _chunk_baseline_columns()),
        # The same columns the import writes, so the baseline copies the same data.
        "edge": ("bundles_memoryedge", EDGE_COLUMNS),
        "entity": ("bundles_entity", ENTITY_COLUMNS),
    }
    team = _team(args["team"])
    scratch = Path(tempfile.mkdtemp(prefix="bench-copy-"))
    files = {name: scratch / f"{name}.copy" for name in columns}
    rows: dict[str, list[tuple[Any, ...]]] = {name: [] for name in columns}  # SQLite only
    postgres = connection.vendor == "postgresql"
    count = 0
    try:
        with connection.cursor() as cursor:
            for name, (table, cols) in columns.items():
                cursor.execute(f"DROP TABLE IF EXISTS bench_copy_{name}")
                if postgres:  # the real table's defaults, constraints and indexes, no FKs
                    cursor.execute(f"CREATE TABLE bench_copy_{name} (LIKE {table} INCLUDING ALL)")
                    cursor.execute(  # columns the import does not write may stay empty here
                        "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                        "AND is_nullable = 'NO' AND is_identity = 'NO' AND column_default IS NULL",
                        [f"bench_copy_{name}"],
                    )
                    for (column,) in cursor.fetchall():
                        if column not in cols:
                            cursor.execute(
                                f"ALTER TABLE bench_copy_{name} ALTER COLUMN {column} DROP NOT NULL"
                            )
                else:
                    cursor.execute(
                        f"CREATE TABLE bench_copy_{name} AS SELECT * FROM {table} WHERE 0"
                    )
        outs = {name: file.open("w", encoding="utf-8") for name, file in files.items()}
        try:
            for name, row in _baseline_rows(Path(args["path"]), team.pk):
                count += 1
                if postgres:
                    outs[name].write("\t".join(_copy_text(v) for v in row) + "\n")
                else:
                    rows[name].append(row)
        finally:
            for out in outs.values():
                out.close()
        with probe(), connection.cursor() as cursor:
            for name, (_, cols) in columns.items():
                names = ", ".join(cols)
                if postgres:
                    with (
                        cursor.cursor.copy(f"COPY bench_copy_{name} ({names}) FROM STDIN") as copy,
                        files[name].open("rb") as source,
                    ):
                        while block := source.read(1 << 20):
                            copy.write(block)
                else:
                    marks = ", ".join(["%s"] * len(cols))
                    cursor.executemany(
                        f"INSERT INTO bench_copy_{name} ({names}) VALUES ({marks})",
                        [
                            tuple(json.dumps(v) if isinstance(v, dict | list) else v for v in r)
                            for r in rows[name]
                        ],
                    )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        with connection.cursor() as cursor:
            for name in columns:
                cursor.execute(f"DROP TABLE IF EXISTS bench_copy_{name}")
    return {"rows": count}
