"""The review index over a long history: what grows with a repository's commits, not its files.

`python bench/steps/history.py --commits 2000 20000 --database-url … --workdir …` builds, per
size, a bare repository of the review step's shape (5k memories, the last 1k proposed, each
linking one of 1,000 source files) whose history has that many commits (made with
`git fast-import`: one hot source file changed per commit, the memories added along the way,
900 of the linked files untouched since the first commit), indexes it cold, adds one commit
upstream (a hot file changed, a new proposal) and indexes again. Each index runs in a fresh
process and reports its wall time and its CPU: the process, its git children and its
PostgreSQL backend (the bench's `Probe`; `BENCH_PROFILE=DIR` profiles each index). `--code
DIR` runs the steps against another checkout (a base worktree from round 8 on, whose Probe
splits its CPU), so base and branch are measured by the same script.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MEMORIES = 5_000
PROPOSALS = 1_000
SOURCES = 1_000  # linked source files; the first HOT change, the rest never after the first commit
HOT = 100
START = 1_735_689_600  # 2025-01-01, one commit a minute after it
WHO = "Bench Agent <agent@bench.invalid>"


def _source(n: int) -> str:
    return f"src/pkg{n % 20:02d}/mod{n:04d}.py"


def _memory_id(n: int) -> str:
    return f"2025{1 + n // 28 % 12:02d}{1 + n % 28:02d}-history-memory-{n:05d}"


def _memory(n: int, status: str, stamp: int) -> tuple[str, bytes]:
    when = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(stamp))
    text = (
        f'---\nid: "{_memory_id(n)}"\ntype: "{("decision", "constraint", "gotcha")[n % 3]}"\n'
        f'title: "History memory {n}"\nstatus: "{status}"\ncreated: "{when}"\n'
        f'updated: "{when}"\nlinks: ["{_source(n % SOURCES)}"]\n---\n'
        f"Memory {n} explains why module {n % SOURCES} works the way it does.\n"
    )
    return f".memoryrail/memories/{_memory_id(n)}.md", text.encode()


def _inline(path: str, data: bytes) -> bytes:
    return b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data)


def _commit(stamp: int, message: str, changes: list[bytes], parent: str | None = None) -> bytes:
    head = (
        f"commit refs/heads/main\nauthor {WHO} {stamp} +0000\ncommitter {WHO} {stamp} +0000\n"
        f"data {len(message)}\n{message}\n"
    )
    if parent:
        head += f"from {parent}\n"
    return head.encode() + b"".join(changes) + b"\n"


def write_history(bare: Path, commits: int) -> None:
    """A bare repository whose main branch has `commits` commits (fast-import, one stream)."""
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(bare)], check=True)
    config = json.dumps({"version": 1, "review": "agents"}).encode() + b"\n"
    first = [_inline(".memoryrail/config.json", config)]
    first += [_inline(_source(n), f"# module {n}\n".encode()) for n in range(SOURCES)]
    stream = [_commit(START, "Initial import", first)]
    total = MEMORIES + PROPOSALS
    added = 0
    for index in range(1, commits):
        stamp = START + 60 * index
        changes = [_inline(_source(index % HOT), f"# module {index % HOT}, v{index}\n".encode())]
        # the memories arrive evenly along the history, the proposals last
        while added < total and added * (commits - 1) < index * total:
            status = "proposed" if added >= MEMORIES else "active"
            changes.append(_inline(*_memory(added, status, stamp)))
            added += 1
        stream.append(_commit(stamp, f"Change {index}", changes))
    subprocess.run(
        ["git", "--git-dir", str(bare), "fast-import", "--quiet"],
        input=b"".join(stream),
        check=True,
    )


def add_commit(bare: Path, commits: int) -> None:
    """One more commit upstream: a hot file changed and one new proposal."""
    stamp = START + 60 * (commits + 1)
    changes = [
        _inline(_source(1), b"# module 1, changed again\n"),
        _inline(*_memory(MEMORIES + PROPOSALS, "proposed", stamp)),
    ]
    subprocess.run(
        ["git", "--git-dir", str(bare), "fast-import", "--quiet"],
        input=_commit(stamp, "One more", changes, parent="refs/heads/main^0"),
        check=True,
    )


# what the step times inside the index (the outermost calls; nested ones are inside them)
WATCHED = [
    ("reviews.git", "WorkingCopy", "added_by"),
    ("reviews.git", "WorkingCopy", "last_commit_time"),
    ("reviews.githistory", "History", "added_by"),
    ("reviews.githistory", "History", "link_times"),
]


# -- the measured step (a fresh process, run with the code under test on its path) ---------


def step(args: dict[str, Any]) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    import django

    django.setup()

    from reviews.models import Memory, Repository
    from reviews.services.repositories import repository_sync

    if args.get("create"):
        from memoryadmin.models import Team

        team, _ = Team.objects.get_or_create(slug=args["team"], defaults={"name": args["team"]})
        Repository.objects.filter(team=team).delete()
        repository = Repository.objects.create(
            team=team, name="history", remote_url=args["remote_url"], branch="main"
        )
        return {"repository_id": repository.pk}
    spent: dict[str, float] = {}
    calls: dict[str, int] = {}
    import importlib

    for module_name, class_name, name in WATCHED:
        try:
            owner = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            continue  # the base has no reviews.githistory
        method = owner.__dict__.get(name)
        if method is None:
            continue
        label = f"{class_name}.{name}"

        def timed(*a, __method=method, __label=label, **k):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return __method(*a, **k)
            finally:
                spent[__label] = spent.get(__label, 0.0) + time.perf_counter() - started
                calls[__label] = calls.get(__label, 0) + 1

        setattr(owner, name, timed)
    from bench.steps.measure import Probe
    from bench.steps.sources import embedding_deferred

    probe = Probe()  # BENCH_PROFILE=DIR: a call tree of each index
    with embedding_deferred(), probe():  # as the review step: a worker embeds afterwards
        repository = repository_sync(repository_id=args["repository_id"])
    if not repository.last_sync_ok:
        raise RuntimeError(f"sync failed: {repository.last_error}")
    import hashlib

    rows = Memory.objects.filter(repository=repository).order_by("memory_id")
    fields = ("memory_id", "author_name", "author_email", "added_commit", "added_at", "stale")
    digest = hashlib.sha256(repr(list(rows.values_list(*fields))).encode()).hexdigest()[:12]
    return {
        "digest": digest,
        "wall": probe.seconds,
        **dict(zip(("process", "git", "backend"), probe.cpu_parts, strict=True)),
        "memories": Memory.objects.filter(repository=repository).count(),
        "stale": Memory.objects.filter(repository=repository, is_stale=True).count(),
        "spent": spent,
        "calls": calls,
    }


def _run_step(env: dict[str, str], code: Path, payload: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "step", json.dumps(payload)],
        cwd=code,
        env={**env, "PYTHONPATH": str(code)},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"history step failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    if argv and argv[0] == "step":
        print(json.dumps(step(json.loads(argv[1]))), flush=True)
        return 0
    parser = argparse.ArgumentParser(prog="bench/steps/history.py", description=__doc__)
    parser.add_argument("--commits", type=int, nargs="+", default=[2_000, 20_000])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[2])
    parser.add_argument("--reindex", type=int, default=1, help="re-indexes after one commit each")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.code))
    from bench.runner import drop_database, prepare_database

    code = args.code.resolve()
    workdir = args.workdir.resolve()
    subprocess.run(["rm", "-rf", str(workdir)], check=True)
    workdir.mkdir(parents=True)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "bench.settings",
        "DATABASE_URL": args.database_url,
        "MEMORYADMIN_DATA_DIR": str(workdir / "data"),
    }
    env.pop("MEMORYADMIN_DEBUG", None)
    prepare_database(args.database_url, workdir)
    try:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=code,
            env={**env, "PYTHONPATH": str(code)},
            check=True,
        )
        for commits in args.commits:
            bare = workdir / f"history-{commits}.git"
            started = time.perf_counter()
            write_history(bare, commits)
            print(f"{commits} commits written in {time.perf_counter() - started:.1f} s")
            made = _run_step(
                env,
                code,
                {"create": True, "team": f"history-{commits}", "remote_url": bare.as_uri()},
            )
            runs = [("cold", _run_step(env, code, made))]
            for n in range(args.reindex):
                add_commit(bare, commits + n)
                runs.append(("one more commit", _run_step(env, code, made)))
            for label, result in runs:
                cpu = result["process"] + result["git"] + result["backend"]
                spent = " ".join(
                    f"{k} {v:.3f} s/{result['calls'][k]}"
                    for k, v in sorted(result["spent"].items())
                )
                print(
                    f"{commits:>6} commits {label:<16} wall {result['wall']:6.2f} s  CPU {cpu:6.2f}"
                    f" (process {result['process']:.2f} git {result['git']:.2f}"
                    f" backend {result['backend']:.2f})  memories {result['memories']}"
                    f" stale {result['stale']} rows {result.get('digest')}  {spent}",
                    flush=True,
                )
    finally:
        drop_database(args.database_url)
    return 0


if __name__ == "__main__":
    # run as a script: its own folder (bench/steps, with a reviews.py and a sources.py) must not
    # shadow the apps of the same names
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    raise SystemExit(main(sys.argv[1:]))
