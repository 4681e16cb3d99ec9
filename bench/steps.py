"""One measured step per process: `python -m bench.steps <step> '<json arguments>'`.

A fresh process per step keeps peak-memory readings honest: the timed section starts from the
process's current RSS with its high-water mark reset, and prints one `BENCH_RESULT {json}` line.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

RESULT_PREFIX = "BENCH_RESULT "


# -- measuring ------------------------------------------------------------------------------


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    """Linux: writing 5 to clear_refs resets VmHWM to the current RSS."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


class Probe:
    """Times one section and records how far the process's peak RSS rose above its start."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.rss_growth_mb = 0.0

    @contextmanager
    def __call__(self) -> Iterator[None]:
        import gc

        gc.collect()
        reset = _reset_peak()
        before = _status_kb("VmRSS") if reset else None
        if before is None:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        yield
        self.seconds = time.perf_counter() - start
        after = _status_kb("VmHWM") if reset else None
        if after is None:
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.rss_growth_mb = max(0, after - before) / 1024


# -- helpers --------------------------------------------------------------------------------


def _team(slug: str):  # type: ignore[no-untyped-def]
    from memoryadmin.models import Team

    team, _ = Team.objects.get_or_create(slug=slug, defaults={"name": slug})
    return team


def _vendor() -> str:
    from django.db import connection

    return connection.vendor


def _user(username: str, teams: list[str], role: str = "admin"):  # type: ignore[no-untyped-def]
    from django.contrib.auth import get_user_model

    from memoryadmin.models import Membership

    user, _ = get_user_model().objects.get_or_create(username=username)
    for slug in teams:
        Membership.objects.update_or_create(user=user, team=_team(slug), defaults={"role": role})
    return user


# -- brain: import and export ---------------------------------------------------------------


def brain_import(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    from bundles.services import bundle_import_file
    from memoryadmin.audit import Actor

    team = _team(args["team"])
    with probe():
        result = bundle_import_file(team=team, actor=Actor.system(), path=Path(args["path"]))
    report = result["report"]
    return {"chunks": report["chunks"], "edges": report["memory_edges"]}


def brain_export(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """Through the real API view, as a client would ask for it; the body is counted, not kept."""
    from rest_framework.test import APIClient

    from memoryadmin.audit import Actor
    from memoryadmin.services import token_create

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
    from bundles.services.imports import CHUNK_INSERT_COLUMNS

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


def _baseline_rows(path: Path, team_id: int) -> dict[str, list[tuple[Any, ...]]]:
    """The rows the import would write, as plain tuples (untimed preparation)."""

    bundle = json.loads(path.read_text(encoding="utf-8"))
    columns = _chunk_baseline_columns()
    chunks = [
        tuple(_chunk_columns(c, team_id).get(name) for name in columns) for c in bundle["chunks"]
    ]
    edges = [
        (
            team_id,
            e["chunk_a"],
            e["chunk_b"],
            e["edge_type"],
            e["weight"],
            e["co_activation_count"],
            e["created_at"],
            e["updated_at"],
        )
        for e in bundle["memory_edges"]
    ]
    entities = [
        (team_id, e["name"], e["frequency"], e["first_seen"], e["last_seen"], e["is_dna"], STAMP)
        for e in bundle["entities"]
    ]
    return {"chunk": chunks, "edge": edges, "entity": entities}


STAMP = "2026-01-01T00:00:00Z"


def import_baseline(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """COPY … FROM STDIN of the same rows into scratch tables shaped like the real ones."""
    from django.db import connection

    from bundles.services.imports import EDGE_COLUMNS, ENTITY_COLUMNS

    columns = {
        "chunk": ("bundles_chunk", _chunk_baseline_columns()),
        # The same columns the import writes, so the baseline copies the same data.
        "edge": ("bundles_memoryedge", EDGE_COLUMNS),
        "entity": ("bundles_entity", ENTITY_COLUMNS),
    }
    team = _team(args["team"])
    rows = _baseline_rows(Path(args["path"]), team.pk)
    scratch = Path(tempfile.mkdtemp(prefix="bench-copy-"))
    files = {}
    postgres = connection.vendor == "postgresql"
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
                    files[name] = scratch / f"{name}.copy"
                    with files[name].open("w", encoding="utf-8") as out:
                        for row in rows[name]:
                            out.write("\t".join(_copy_text(v) for v in row) + "\n")
                else:
                    cursor.execute(
                        f"CREATE TABLE bench_copy_{name} AS SELECT * FROM {table} WHERE 0"
                    )
        count = sum(len(r) for r in rows.values())
        if postgres:
            del rows
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


# -- sources --------------------------------------------------------------------------------


def source_setup(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    from django.utils import timezone

    from sources.models import Source, SourceKind, SourceState

    team = _team(args["team"])
    Source.objects.filter(team=team).delete()
    source = Source.objects.create(
        team=team,
        kind=SourceKind.LOCAL,
        identity=str(Path(args["path"]).resolve()),
        state=SourceState.APPROVED,
        approved_at=timezone.now(),
    )
    return {"source_id": source.pk}


def source_refresh(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    from sources.services import source_refresh as refresh

    with probe():
        run = refresh(source_id=args["source_id"])
    if run.status != "succeeded":
        raise RuntimeError(f"refresh {run.status}: {run.error_code} {run.error}")
    return {"records": run.record_count, "parsed": run.parsed_count, "reused": run.reused_count}


def source_baseline(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """Read the same files and parse their front matter with the strict reader alone."""
    from formats import frontmatter

    root = Path(args["path"])
    with probe():
        manifest = json.loads((root / "memories.json").read_bytes())
        for entry in manifest["memories"]:
            frontmatter.parse((root / entry["path"]).read_bytes())
    return {"records": len(manifest["memories"])}


# -- reviews --------------------------------------------------------------------------------


def review_setup(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    from reviews.models import Repository

    team = _team(args["team"])
    Repository.objects.filter(team=team).delete()
    repository = Repository.objects.create(
        team=team, name="bench", remote_url=args["remote_url"], branch="main"
    )
    return {"repository_id": repository.pk}


def review_index(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    from reviews.models import Memory
    from reviews.services.repositories import repository_sync

    with probe():
        repository = repository_sync(repository_id=args["repository_id"])
    if not repository.last_sync_ok:
        raise RuntimeError(f"sync failed: {repository.last_error}")
    return {
        "memories": Memory.objects.filter(repository=repository).count(),
        "proposed": Memory.objects.filter(repository=repository, status="proposed").count(),
    }


def index_baseline(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """git clone of the remote, then read and parse every memory with the strict reader."""
    from formats import frontmatter

    target = Path(tempfile.mkdtemp(prefix="bench-clone-")) / "copy"
    try:
        with probe():
            subprocess.run(
                ["git", "clone", "--quiet", args["remote_url"], str(target)],
                check=True,
            )
            count = 0
            for path in sorted((target / ".memoryrail" / "memories").glob("*.md")):
                frontmatter.parse(path.read_bytes())
                count += 1
    finally:
        shutil.rmtree(target.parent, ignore_errors=True)
    return {"memories": count}


def review_approve(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """Approve every proposal in one batch; the push task runs eagerly when the batch commits."""
    from memoryadmin.audit import Actor
    from reviews.models import Decision, Memory
    from reviews.services.decisions import proposals_review

    repository_id = args["repository_id"]
    team_slug = args["team"]
    user = _user("bench-reviewer", [team_slug], role="reviewer")
    ids = list(
        Memory.objects.filter(repository_id=repository_id, status="proposed").values_list(
            "pk", flat=True
        )
    )
    start = time.time()
    with probe():
        decisions = proposals_review(
            actor=Actor(user=user), team=_team(team_slug), memory_ids=ids, kind="approve"
        ).decisions
    decision = Decision.objects.get(pk=decisions[0].pk)
    if decision.state != "pushed":
        raise RuntimeError(f"decision {decision.state}: {decision.state_detail}")
    pushed = decision.finished_at.timestamp() - start
    return {"proposals": len(ids), "pushed_seconds": pushed, "commit": decision.commit_sha}


BASELINE_SCRIPT = r"""set -eu
xargs -a "$1" sed -i -e 's/^status: "proposed"/status: "active"/' \
  -e 's/^updated: .*/updated: "2026-06-01T00:00:00.000Z"/'
git add -A
git commit --quiet --no-verify -m "Approve $(wc -l < "$1") proposals"
git push --quiet origin HEAD:refs/heads/main
"""


def review_baseline(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """The same edits made by a shell script, then git add -A && git commit && git push."""
    from bench.data import GIT_ENV

    scratch = Path(tempfile.mkdtemp(prefix="bench-git-"))
    try:
        bare = scratch / "remote.git"
        shutil.copytree(args["bare"], bare)
        clone = scratch / "clone"
        subprocess.run(
            ["git", "clone", "--quiet", bare.as_uri(), str(clone)],
            check=True,
        )
        paths = scratch / "paths.txt"
        paths.write_text("\n".join(args["paths"]) + "\n", encoding="utf-8")
        script = scratch / "approve.sh"
        script.write_text(BASELINE_SCRIPT, encoding="utf-8")
        with probe():
            subprocess.run(
                ["bash", str(script), str(paths)],
                cwd=clone,
                env={**os.environ, **GIT_ENV},
                check=True,
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {"proposals": len(args["paths"])}


# -- web ------------------------------------------------------------------------------------


def web_setup(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """A logged-in session for the pages' teams; the cookie serves the gunicorn run too."""
    from django.test import Client

    user = _user("bench-admin", args["teams"], role="admin")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    return {"sessionid": client.cookies["sessionid"].value}


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]
    return {"p50_ms": statistics.median(ordered) * 1000, "p95_ms": p95 * 1000}


def time_requests(get: Callable[[str], int], urls: dict[str, str], count: int) -> dict[str, Any]:
    results = {}
    for name, url in urls.items():
        get(url)  # warm caches, as a second visit would
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            status = get(url)
            samples.append(time.perf_counter() - start)
            if status != 200:
                raise RuntimeError(f"{url} answered {status}")
        results[name] = _percentiles(samples)
    return results


def web_client(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_HOST="127.0.0.1")
    client.cookies["sessionid"] = args["sessionid"]
    urls = args["urls"]
    queries = {}
    for name, url in urls.items():
        with CaptureQueriesContext(connection) as captured:
            client.get(url)
        queries[name] = len(captured.captured_queries)
    with probe():
        timings = time_requests(lambda url: client.get(url).status_code, urls, args["requests"])
    return {"timings": timings, "queries": queries}


STEPS: dict[str, Callable[[dict[str, Any], Probe], dict[str, Any]]] = {
    "brain_import": brain_import,
    "brain_export": brain_export,
    "brain_export_file": brain_export_file,
    "export_baseline": export_baseline,
    "import_baseline": import_baseline,
    "source_setup": source_setup,
    "source_refresh": source_refresh,
    "source_baseline": source_baseline,
    "review_setup": review_setup,
    "review_index": review_index,
    "index_baseline": index_baseline,
    "review_approve": review_approve,
    "review_baseline": review_baseline,
    "web_setup": web_setup,
    "web_client": web_client,
}


def main(argv: list[str]) -> int:
    name, raw = argv[0], argv[1] if len(argv) > 1 else "{}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    import django

    django.setup()
    probe = Probe()
    extra = STEPS[name](json.loads(raw), probe)
    result = {"seconds": probe.seconds, "rss_growth_mb": probe.rss_growth_mb, **extra}
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
