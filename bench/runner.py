"""`python -m bench`: generate data, run each measured step in a fresh process, print a table.

Every result is a ratio against a baseline measured in the same run on the same machine:
absolute times drift on shared machines, ratios much less.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from bench.agents import bench_agents
from bench.benchmarks import (
    ROOT,
    Run,
    bench_brain,
    bench_review_approve,
    bench_review_index,
    bench_source,
    bench_web,
)
from bench.report import machine, table, write_docs

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/memoryadmin_bench"


# -- database -------------------------------------------------------------------------------


def prepare_database(url: str, workdir: Path) -> str:
    """A fresh scratch database: PostgreSQL (dropped and created) or a SQLite file."""
    parts = urlsplit(url)
    if parts.scheme.startswith("sqlite"):
        path = Path(parts.path)
        path.unlink(missing_ok=True)
        return url
    import psycopg

    name = parts.path.lstrip("/")
    if not name or name in ("postgres", "test", "memoryadmin"):
        raise SystemExit(f"refusing to benchmark in database {name!r}: name a scratch database")
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')
    return url


def drop_database(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme.startswith("sqlite"):
        Path(parts.path).unlink(missing_ok=True)
        return
    import psycopg

    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{parts.path.lstrip("/")}" WITH (FORCE)')


def migrate(run: Run) -> None:
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=run.env,
        check=True,
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10k chunks and smaller volumes")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL),
        help="a scratch database, dropped and re-created (default %(default)s)",
    )
    parser.add_argument("--chunks", type=int, nargs="+", dest="chunk_sizes")
    parser.add_argument("--records", type=int, nargs="+", help="source sizes (records)")
    parser.add_argument("--memories", type=int)
    parser.add_argument("--proposals", type=int)
    parser.add_argument("--requests", type=int)
    parser.add_argument(
        "--only", nargs="+", choices=["brain", "source", "review", "web", "agents"], default=None
    )
    parser.add_argument("--workdir", type=Path, default=ROOT / "var" / "bench")
    parser.add_argument("--write-docs", type=Path, help="replace the results block in this file")
    parser.add_argument("--keep", action="store_true", help="keep the database and data")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument(
        "--large", action="store_true", help="also 1M chunks (export/import memory, linear time)"
    )
    args = parser.parse_args(argv)
    full = {"chunk_sizes": [10_000, 100_000], "records": [10_000, 100_000], "memories": 5_000}
    quick = {"chunk_sizes": [10_000], "records": [2_000], "memories": 1_000}
    defaults = quick if args.quick else full
    if args.large:
        defaults["chunk_sizes"] = [*defaults["chunk_sizes"], 1_000_000]
    defaults |= {"proposals": defaults["memories"] // 5, "requests": 50 if args.quick else 200}
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    only = set(args.only or ["brain", "source", "review", "web", "agents"])
    workdir = args.workdir.resolve()
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "bench.settings",
        "DATABASE_URL": args.database_url,
        "MEMORYADMIN_DATA_DIR": str(workdir / "data"),
        # The refresh bench reads a local folder: production allows only configured roots.
        "MEMORYADMIN_SOURCE_LOCAL_ROOTS": str(workdir),
        "PYTHONPATH": str(ROOT),
    }
    env.pop("MEMORYADMIN_DEBUG", None)
    run = Run(args=args, env=env, workdir=workdir)
    started = time.monotonic()
    prepare_database(args.database_url, workdir)
    try:
        migrate(run)
        vendor = "PostgreSQL" if args.database_url.startswith("postgres") else "SQLite"
        print(f"bench on {vendor}, {machine()}")
        source_id = None
        if "brain" in only:
            bench_brain(run)
        if "source" in only or "web" in only:
            source_id = bench_source(run)
        repository = None
        if "review" in only or "web" in only:
            repository = bench_review_index(run)
        if "web" in only:
            bench_web(run, source_id, repository is not None)
        if "review" in only and repository is not None:
            bench_review_approve(run, *repository)
        if "agents" in only:
            bench_agents(run)
    finally:
        if not args.keep:
            drop_database(args.database_url)
            shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.monotonic() - started
    header = (
        f"Measured {time.strftime('%Y-%m-%d')} on {vendor}, {machine()}; "
        f"`python -m bench{' --quick' if args.quick else ''}` took {elapsed / 60:.1f} min."
    )
    text = f"{header}\n\n{table(run.rows)}"
    print()
    print(text)
    if args.write_docs:
        write_docs(args.write_docs, text)
    return 0
