"""A bounded load run against a real server, worker, database, broker and git remote.

    python -m tests.faults.load --clients 50 --seconds 30

starts gunicorn (gthread) on 127.0.0.1 and a Celery worker, both on a scratch database of their
own (PostgreSQL `memoryadmin_load` when DATABASE_URL names PostgreSQL, else a SQLite file under
var/), seeds a team with an all-scope token, a local source, and a git repository (a bare remote
over file://) holding many proposals. Then, for a bounded time and request count:

- `--clients` API clients (threads with httpx) loop: export (JSON and NDJSON), import seed
  bundles that overlap each other, import their own last export again, read context;
- `--reviewers` reviewer clients approve the proposals through the API;
- one thread adds a record to the source and asks for a refresh, every few seconds.

At the end it waits for the worker to settle and checks the final state: no 5xx and no transport
error, no duplicate chunk, every chunk explained (the distinct contents imported, plus the source
records and the repository's active memories mirrored), every approval recorded once, pushed
once and `active` at the bare remote's HEAD, every refresh finished, and the audit events match
the requests that succeeded. tests/faults/test_load.py runs a small version in the suite.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
TEAM_SLUG = "load"


@dataclass
class Config:
    clients: int = 50
    seconds: float = 30.0
    reviewers: int = 4
    proposals: int = 150
    records: int = 30
    bundles: int = 6
    bundle_chunks: int = 200
    max_requests: int = 5000  # per client: the run is bounded in count as well as in time
    refreshes: int = 8
    web_workers: int = 3
    web_threads: int = 8
    worker_concurrency: int = 2
    settle_seconds: float = 240.0


@dataclass
class World:
    team_id: int
    token: str
    source_id: int
    source_root: Path
    repository_id: int
    remote_bare: Path
    proposals: list[str]  # memory ids, in the order reviewers take them
    base_memories: int
    bundles: list[bytes]
    bundle_contents: list[set[str]]
    record_titles: list[str] = field(default_factory=list)
    approved: list[str] = field(default_factory=list)  # memory ids answered 202
    imported_bundles: set[int] = field(default_factory=set)  # seed bundles answered 200
    inserted: int = 0  # sum of `chunks.inserted` over every import answered 200
    runs: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.status: dict[str, Counter[int]] = defaultdict(Counter)
        self.transport: Counter[str] = Counter()
        self.anomalies: list[str] = []

    def record(self, op: str, status: int, seconds: float) -> None:
        with self.lock:
            self.latency[op].append(seconds)
            self.status[op][status] += 1

    def failed(self, op: str, exc: BaseException) -> None:
        with self.lock:
            self.transport[f"{op}: {type(exc).__name__}"] += 1

    def anomaly(self, text: str) -> None:
        with self.lock:
            if len(self.anomalies) < 50:
                self.anomalies.append(text)

    def summary(self, elapsed: float) -> dict[str, Any]:
        ops = {}
        total = 0
        for op in sorted(self.latency):
            values = sorted(self.latency[op])
            total += len(values)
            ops[op] = {
                "count": len(values),
                "per_second": round(len(values) / elapsed, 1),
                "p50_ms": round(_quantile(values, 0.50) * 1000, 1),
                "p95_ms": round(_quantile(values, 0.95) * 1000, 1),
                "max_ms": round(values[-1] * 1000, 1),
                "status": dict(sorted(self.status[op].items())),
            }
        return {
            "elapsed_s": round(elapsed, 1),
            "requests": total,
            "per_second": round(total / elapsed, 1),
            "operations": ops,
            "server_errors": sum(
                n for counts in self.status.values() for s, n in counts.items() if s >= 500
            ),
            "transport_errors": dict(self.transport),
            "anomalies": self.anomalies,
        }


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    return values[min(len(values) - 1, int(q * len(values)))]


# -- the world ---------------------------------------------------------------------------------


def _memory_id(i: int) -> str:
    return f"20260301-load-{i:04d}"


def make_load_remote(root: Path, *, proposals: int, base: int) -> Path:
    """A bare remote (file://) with `base` active memories and `proposals` proposals."""
    from tests.reviews.conftest import AGENTS_MD, git, memory_text

    root.mkdir(parents=True, exist_ok=True)
    bare = root / "remote.git"
    git(root, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    seed = root / "seed"
    git(root, "init", "--quiet", "--initial-branch=main", str(seed))
    memories = seed / ".memoryrail" / "memories"
    memories.mkdir(parents=True)
    (seed / ".memoryrail" / "config.json").write_text('{"version": 1, "review": "agents"}\n')
    (seed / "AGENTS.md").write_text(AGENTS_MD)
    for i in range(base):
        mid = f"20260101-base-{i:02d}"
        (memories / f"{mid}.md").write_text(
            memory_text(mid, title=f"Base decision {i}", body=f"Base memory {i} holds.\n")
        )
    for i in range(proposals):
        mid = _memory_id(i)
        (memories / f"{mid}.md").write_text(
            memory_text(
                mid,
                type="gotcha",
                title=f"Load proposal {i}",
                status="proposed",
                body=f"Proposal {i} under load.\n",
            )
        )
    git(seed, "add", "-A")
    git(seed, "commit", "--quiet", "-m", "Seed memories")
    git(seed, "remote", "add", "origin", bare.as_uri())
    git(seed, "push", "--quiet", "origin", "main")
    return bare


def _seed_bundles(count: int, size: int) -> tuple[list[bytes], list[set[str]]]:
    """Bundle b holds facts [b*size/2, b*size/2 + size): each overlaps its neighbours by half."""
    from tests.bundles.helpers import chunk, make_bundle

    step = size // 2
    bodies, contents = [], []
    for b in range(count):
        texts = [f"load fact {n}: " + "lorem ipsum " * 8 for n in range(b * step, b * step + size)]
        bundle = make_bundle(chunks=[chunk(i, text) for i, text in enumerate(texts)])
        bodies.append(json.dumps(bundle).encode())
        contents.append(set(texts))
    return bodies, contents


def _record_title(i: int) -> str:
    return f"Load record {i}"


def write_record(root: Path, i: int, count: int) -> None:
    """Write record i, then the manifest listing records 0..count-1 (atomically replaced)."""
    from tests.sources.helpers import manifest_text, record_text

    (root / "records").mkdir(parents=True, exist_ok=True)
    rid = f"load-{i:04d}"
    (root / "records" / f"{rid}.md").write_text(
        record_text(rid, title=_record_title(i), body=f"Record {i} says hello.\n")
    )
    manifest = root / "memories.json.tmp"
    manifest.write_text(manifest_text([f"load-{n:04d}" for n in range(count)], "Load source"))
    os.replace(manifest, root / "memories.json")


def build_world(root: Path, cfg: Config) -> World:
    """Everything the run needs, committed, in the calling process."""
    from django.db import transaction

    from memoryadmin.audit import Actor
    from memoryadmin.models import Scope
    from memoryadmin.services import team_create
    from memoryadmin.tokens import token_create
    from reviews.services.repositories import repository_create, repository_sync
    from sources.services.lifecycle import source_add, source_approve
    from sources.services.refresh import source_refresh

    system = Actor.system()
    team = team_create(actor=system, slug=TEAM_SLUG, name="Load")
    _, secret = token_create(actor=system, team=team, name="load", scopes=list(Scope.values))
    source_root = root / "source"
    for i in range(cfg.records):
        write_record(source_root, i, i + 1)
    with transaction.atomic():
        source = source_add(actor=system, team=team, location=str(source_root))
    source_approve(actor=system, source=source)
    run = source_refresh(source_id=source.pk)
    assert run.status == "succeeded", (run.status, run.error)
    base = 5
    bare = make_load_remote(root / "git", proposals=cfg.proposals, base=base)
    with transaction.atomic():
        repository = repository_create(
            actor=system, team=team, name="load", remote_url=bare.as_uri(), allow_local=True
        )
    repository_sync(repository_id=repository.pk)
    bundles, contents = _seed_bundles(cfg.bundles, cfg.bundle_chunks)
    return World(
        team_id=team.pk,
        token=secret,
        source_id=source.pk,
        source_root=source_root,
        repository_id=repository.pk,
        remote_bare=bare,
        proposals=[_memory_id(i) for i in range(cfg.proposals)],
        base_memories=base,
        bundles=bundles,
        bundle_contents=contents,
        record_titles=[_record_title(i) for i in range(cfg.records)],
    )


# -- processes ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def process_env(*, db_name: str, data_dir: Path, queue: str) -> dict[str, str]:
    env = os.environ.copy()
    env.update(
        DJANGO_SETTINGS_MODULE="tests.settings",
        MEMORYADMIN_CELERY_EAGER="false",
        MEMORYADMIN_WORKER_DB_NAME=db_name,
        MEMORYADMIN_DATA_DIR=str(data_dir),
        MEMORYADMIN_CELERY_QUEUE=queue,
        MEMORYADMIN_REPOSITORY_ALLOW_LOCAL_REMOTES="true",
        PYTHONUNBUFFERED="1",
    )
    return env


@contextmanager
def running_stack(cfg: Config, env: dict[str, str], log_dir: Path) -> Iterator[str]:
    """gunicorn and a Celery worker on 127.0.0.1; yields the server's base URL."""
    from memoryadmin.celery import queue_names

    port = free_port()
    log_dir.mkdir(parents=True, exist_ok=True)
    web_log, worker_log = log_dir / "web.log", log_dir / "worker.log"
    handles = [web_log.open("w"), worker_log.open("w")]
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "memoryadmin.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(cfg.web_workers),
            "--threads",
            str(cfg.web_threads),
            "--worker-class",
            "gthread",
            "--timeout",
            "120",
            "--graceful-timeout",
            "5",
        ],
        cwd=ROOT,
        env=env,
        stdout=handles[0],
        stderr=subprocess.STDOUT,
    )
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "memoryadmin",
            "worker",
            "--pool=prefork",
            f"--concurrency={cfg.worker_concurrency}",
            "--loglevel=INFO",
            "-Q",
            ",".join(queue_names(env["MEMORYADMIN_CELERY_QUEUE"])),
            "--without-gossip",
            "--without-mingle",
            "-n",
            f"load-{uuid.uuid4().hex[:6]}@%h",
        ],
        cwd=ROOT,
        env=env,
        stdout=handles[1],
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        ready = False
        while time.monotonic() < deadline:
            for process, log in ((web, web_log), (worker, worker_log)):
                if process.poll() is not None:
                    raise RuntimeError(f"{log.name} exited:\n{log.read_text()[-3000:]}")
            try:
                ready = httpx.get(base + "/v1/spec", timeout=2).status_code == 200
            except httpx.TransportError:
                ready = False
            if ready and "ready." in worker_log.read_text():
                break
            time.sleep(0.2)
        else:
            raise RuntimeError("the server or the worker did not start in 60 s")
        yield base
    finally:
        for process in (web, worker):
            if process.poll() is None:
                process.terminate()
        for process in (web, worker):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for handle in handles:
            handle.close()


# -- the clients -------------------------------------------------------------------------------


def _timed(stats: Stats, op: str, call: Any, *args: Any, **kwargs: Any) -> httpx.Response | None:
    started = time.perf_counter()
    try:
        response = call(*args, **kwargs)
        response.read()
    except httpx.HTTPError as exc:
        stats.failed(op, exc)
        return None
    stats.record(op, response.status_code, time.perf_counter() - started)
    if response.status_code >= 400:
        stats.anomaly(f"{op}: {response.status_code} {response.text[:300]}")
    return response


def _import(world: World, stats: Stats, client: httpx.Client, op: str, body: bytes) -> bool:
    response = _timed(
        stats,
        op,
        client.post,
        "/v1/brain/import",
        content=body,
        headers={"Content-Type": "application/json"},
    )
    if response is None or response.status_code != 200:
        return False
    inserted = response.json()["report"]["chunks"]["inserted"]
    with world.lock:
        world.inserted += inserted
    return True


def api_client(world: World, stats: Stats, base: str, n: int, cfg: Config, stop: float) -> None:
    rng = random.Random(n)
    last_export: bytes | None = None
    with httpx.Client(
        base_url=base, timeout=120, headers={"Authorization": f"Bearer {world.token}"}
    ) as client:
        first = n % len(world.bundles)  # each seed bundle is imported at least once
        if _import(world, stats, client, "import_bundle", world.bundles[first]):
            with world.lock:
                world.imported_bundles.add(first)
        for _ in range(cfg.max_requests - 1):
            if time.monotonic() >= stop:
                return
            roll = rng.random()
            if roll < 0.25:
                response = _timed(stats, "export_json", client.post, "/v1/brain/export", json={})
                if response is not None and response.status_code == 200:
                    bundle = response.json()
                    counts = bundle["manifest"]["counts"]
                    if counts.get("chunks") != len(bundle.get("chunks", [])):
                        stats.anomaly(f"export_json counts {counts} != sections")
                    last_export = response.content
            elif roll < 0.45:
                response = _timed(
                    stats, "export_ndjson", client.post, "/v1/brain/export/stream", json={}
                )
                if response is not None and response.status_code == 200:
                    trailer = json.loads(response.text.rstrip("\n").rsplit("\n", 1)[-1])
                    if trailer.get("kind") != "trailer" or trailer.get("counts_match") is not True:
                        stats.anomaly(f"export_ndjson trailer {str(trailer)[:200]}")
            elif roll < 0.65:
                b = rng.randrange(len(world.bundles))
                if _import(world, stats, client, "import_bundle", world.bundles[b]):
                    with world.lock:
                        world.imported_bundles.add(b)
            elif roll < 0.75 and last_export is not None:
                _import(world, stats, client, "import_export", last_export)
            else:
                _timed(stats, "context", client.get, "/api/context/", params={"limit": 100})


def reviewer(
    world: World, stats: Stats, base: str, todo: list[str], pause: float, stop: float
) -> None:
    with httpx.Client(
        base_url=base, timeout=120, headers={"Authorization": f"Bearer {world.token}"}
    ) as client:
        while time.monotonic() < stop:
            with world.lock:
                if not todo:
                    return
                memory_id = todo.pop(0)
            response = _timed(
                stats,
                "approve",
                client.post,
                f"/api/reviews/proposals/{memory_id}/approve/",
                json={"comment": "load run"},
            )
            if response is not None and response.status_code == 202:
                with world.lock:
                    world.approved.append(memory_id)
            time.sleep(pause)


def refresher(world: World, stats: Stats, cfg: Config, stop: float, halt: threading.Event) -> None:
    """Add a record to the source and ask for a refresh (the service the UI button calls)."""
    from django.db import connection, transaction

    from memoryadmin.audit import Actor
    from sources.models import Source
    from sources.services.lifecycle import source_refresh_request

    interval = max(0.5, (stop - time.monotonic()) / (cfg.refreshes + 1))
    try:
        for _ in range(cfg.refreshes):
            if halt.wait(interval) or time.monotonic() >= stop:
                return
            count = len(world.record_titles) + 1
            write_record(world.source_root, count - 1, count)
            world.record_titles.append(_record_title(count - 1))
            started = time.perf_counter()
            with transaction.atomic():
                source = Source.objects.select_related("team").get(pk=world.source_id)
                run = source_refresh_request(actor=Actor.system(), source=source)
            stats.record("refresh_request", 200, time.perf_counter() - started)
            world.runs.append(run.pk)
    finally:
        connection.close()


def drive(world: World, cfg: Config, base: str) -> dict[str, Any]:
    stats = Stats()
    started = time.monotonic()
    stop = started + cfg.seconds
    todo = list(world.proposals)
    pause = max(0.0, cfg.seconds * cfg.reviewers / max(1, len(todo)) * 0.8)
    halt = threading.Event()
    threads = [
        threading.Thread(target=api_client, args=(world, stats, base, n, cfg, stop))
        for n in range(cfg.clients)
    ]
    threads += [
        threading.Thread(target=reviewer, args=(world, stats, base, todo, pause, stop))
        for _ in range(cfg.reviewers)
    ]
    refresh = threading.Thread(target=refresher, args=(world, stats, cfg, stop, halt))
    for thread in [*threads, refresh]:
        thread.start()
    for thread in threads:
        thread.join()
    halt.set()
    refresh.join()
    return stats.summary(time.monotonic() - started)


# -- settling and checking ---------------------------------------------------------------------


def settle(world: World, timeout: float) -> float:
    """Wait for the worker: every decision pushed and indexed, every refresh finished."""
    from reviews.models import Decision, Memory, PushState
    from sources.models import RefreshRun, RunStatus

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        pending = Decision.objects.filter(
            repository_id=world.repository_id, state=PushState.PENDING
        ).exists()
        running = RefreshRun.objects.filter(
            pk__in=world.runs, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]
        ).exists()
        indexed = Memory.objects.filter(
            repository_id=world.repository_id, memory_id__in=world.approved, status="active"
        ).count() == len(world.approved)
        if not pending and not running and indexed:
            return time.monotonic() - started
        time.sleep(0.5)
    decisions = Counter(
        Decision.objects.filter(repository_id=world.repository_id).values_list("state", flat=True)
    )
    runs = Counter(RefreshRun.objects.filter(pk__in=world.runs).values_list("status", flat=True))
    raise AssertionError(
        f"the worker did not settle within {timeout:.0f} s: decisions {dict(decisions)}, "
        f"runs {dict(runs)}, {len(world.approved)} approved"
    )


def _remote_memories(bare: Path) -> dict[str, Any]:
    from formats import memoryrail
    from tests.reviews.conftest import git

    folder = memoryrail.MEMORIES_DIR
    found = {}
    for path in git(bare, "ls-tree", "--name-only", "main", f"{folder}/").split():
        memory, _ = memoryrail.parse_memory(git(bare, "show", f"main:{path}"), path=path)
        if memory is not None:
            found[memory.id] = memory
    return found


def check(world: World, summary: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """Problems found (empty when all is well) and the final counts with their explanation."""
    from django.db.models import Count

    from bundles.models import Chunk, ImportJob
    from formats.crosswalk import chunk_content
    from memoryadmin.models import AuditEvent
    from reviews.models import Decision, PushState
    from reviews.services.push import TRAILER
    from sources.models import RefreshRun, RunStatus, Source
    from tests.reviews.conftest import git

    problems: list[str] = []
    if summary["server_errors"]:
        problems.append(f"{summary['server_errors']} responses were 5xx")
    if summary["transport_errors"]:
        problems.append(f"transport errors: {summary['transport_errors']}")
    if summary["anomalies"]:
        problems.append(f"unexpected answers: {summary['anomalies'][:5]}")

    # Chunks: unique by content hash, and exactly the contents that came in.
    rows = list(Chunk.objects.filter(team_id=world.team_id).values_list("content", "content_hash"))
    contents = [content for content, _ in rows]
    duplicates = len(rows) - len({digest for _, digest in rows})
    if duplicates or len(contents) != len(set(contents)):
        problems.append(f"{duplicates} duplicate chunk hashes")
    imported: set[str] = set().union(*(world.bundle_contents[b] for b in world.imported_bundles))
    remote = _remote_memories(world.remote_bare)
    active = {mid: m for mid, m in remote.items() if m.status == "active"}
    snapshot = Source.objects.get(pk=world.source_id).current_snapshot
    served = list(snapshot.records.values_list("title", "body"))
    records = {chunk_content(title, body) for title, body in served}
    if sorted(title for title, _ in served) != sorted(world.record_titles):
        problems.append("the snapshot's records are not the records written")
    memories = {chunk_content(m.title, m.body) for m in active.values()}
    expected = imported | records | memories
    if set(contents) != expected:
        problems.append(
            f"chunks differ: {len(set(contents) - expected)} unexplained, "
            f"{len(expected - set(contents))} missing"
        )
    if world.inserted != len(imported):
        problems.append(f"imports inserted {world.inserted} chunks, not {len(imported)}")
    if ImportJob.objects.filter(team_id=world.team_id).exists():
        problems.append("an import became a background job")

    # Decisions: one per approval, each pushed once, each proposal active at the remote's HEAD.
    decisions = list(Decision.objects.filter(repository_id=world.repository_id))
    states = Counter(d.state for d in decisions)
    if len(decisions) != len(world.approved) or states[PushState.PUSHED] != len(decisions):
        problems.append(f"{len(world.approved)} approvals, decisions {dict(states)}")
    not_active = [mid for mid in world.approved if mid not in active]
    if not_active:
        problems.append(f"approved but not active at the remote: {not_active[:10]}")
    log = git(world.remote_bare, "log", "--format=%B%x00", "main")
    trailers = Counter(
        line.split(":", 1)[1].strip() for line in log.splitlines() if line.startswith(f"{TRAILER}:")
    )
    if sorted(trailers) != sorted(str(d.pk) for d in decisions) or any(
        n != 1 for n in trailers.values()
    ):
        problems.append(f"commits per decision: {dict(trailers)}")
    for decision in decisions:
        try:
            git(world.remote_bare, "merge-base", "--is-ancestor", decision.commit_sha, "main")
        except AssertionError:
            problems.append(f"decision {decision.pk}: {decision.commit_sha} not on main")
    proposed = sum(1 for m in remote.values() if m.status == "proposed")
    if proposed != len(world.proposals) - len(world.approved):
        problems.append(f"{proposed} proposals left, not {len(world.proposals)} - approvals")

    # Refreshes: each finished, and the snapshot holds every record written.
    runs = Counter(RefreshRun.objects.filter(pk__in=world.runs).values_list("status", flat=True))
    if runs[RunStatus.SUCCEEDED] != len(world.runs):
        problems.append(f"refresh runs {dict(runs)}")
    if len(records) != len(world.record_titles):
        problems.append(f"{len(records)} records served, {len(world.record_titles)} written")

    # The audit log tells the same story as the answers.
    ok = {op: data["status"].get(200, 0) for op, data in summary["operations"].items()}
    actions = dict(
        AuditEvent.objects.filter(team_id=world.team_id)
        .values_list("action")
        .annotate(n=Count("id"))
        .values_list("action", "n")
    )
    audit_expected = {
        "bundle.import": ok.get("import_bundle", 0) + ok.get("import_export", 0),
        "bundle.export": ok.get("export_json", 0) + ok.get("export_ndjson", 0),
        "review.approve": len(world.approved),
        "review.push-pushed": len(decisions),
    }
    for action, count in audit_expected.items():
        if actions.get(action, 0) != count:
            problems.append(f"audit {action}: {actions.get(action, 0)} events, {count} expected")

    final = {
        "chunks": len(rows),
        "chunks_explained": {
            "distinct_imported_contents": len(imported),
            "source_records_mirrored": len(records),
            "active_memories_mirrored": len(memories),
            "overlap": len(imported) + len(records) + len(memories) - len(expected),
        },
        "imports_answered_200": audit_expected["bundle.import"],
        "chunks_inserted_by_imports": world.inserted,
        "exports_answered_200": audit_expected["bundle.export"],
        "approvals": len(world.approved),
        "decisions": dict(states),
        "commits_with_trailer": sum(trailers.values()),
        "memories_at_remote": dict(Counter(m.status for m in remote.values())),
        "refresh_runs": dict(runs),
        "records": len(records),
    }
    return problems, final


# -- standalone --------------------------------------------------------------------------------


def _scratch_database(name: str) -> str:
    """Drop and create the scratch database; return the name Django should open."""
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        import psycopg

        admin_url = url.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{name}"')
        return name
    path = ROOT / "var" / f"{name}.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = Config()
    for name, value in vars(defaults).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    parser.add_argument("--database", default="memoryadmin_load", help="scratch database name")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    cfg = Config(**{name: getattr(args, name) for name in vars(defaults)})

    scratch = Path(tempfile.mkdtemp(prefix="memoryadmin-load-"))
    db_name = _scratch_database(args.database)
    env = process_env(db_name=db_name, data_dir=scratch / "data", queue=f"load-{os.getpid()}")
    os.environ.update(env)
    import django

    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.db import connection

    print(f"database: {connection.vendor} {db_name}; broker: {os.environ.get('REDIS_URL') or 'fs'}")
    world = build_world(scratch, cfg)
    with running_stack(cfg, env, scratch / "logs") as base:
        summary = drive(world, cfg, base)
        summary["settle_s"] = round(settle(world, cfg.settle_seconds), 1)
    problems, final = check(world, summary)
    report = {"config": vars(cfg), "summary": summary, "final": final, "problems": problems}
    print(json.dumps(report, indent=2, default=str))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
    if not problems:
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        print(f"logs kept in {scratch / 'logs'}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
