"""`python -m bench.semantic [--quick] [--database-url URL]`: quality and speed of semantic
recall, on a scratch database (dropped afterwards unless --keep)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/memoryadmin_bench_semantic"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.semantic", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2k embed, 10k search sizes")
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_SEMANTIC_DATABASE_URL", DEFAULT_URL)
    )
    parser.add_argument("--embed", type=int, help="chunks embedded for the throughput rows")
    parser.add_argument("--reembed", type=int, help="chunks re-embedded for the memory row")
    parser.add_argument("--search", type=int, help="chunks searched for the latency rows")
    parser.add_argument("--queries", type=int, default=200, help="timed searches")
    parser.add_argument("--skip-eval", action="store_true")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    sizes = (2_000, 2_000, 10_000) if args.quick else (5_000, 100_000, 100_000)
    for name, value in zip(("embed", "reembed", "search"), sizes, strict=True):
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from bundles.embeddings.model import ENABLE_HINT, installed

    if not installed():
        print(f"bench.semantic skipped. {ENABLE_HINT}")
        return 0
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    os.environ["DATABASE_URL"] = args.database_url
    os.environ["MEMORYADMIN_SEMANTIC_ENABLED"] = "true"
    os.environ.setdefault("MEMORYADMIN_DATA_DIR", str(ROOT / "var" / "bench-semantic"))
    from bench.runner import drop_database, prepare_database

    prepare_database(args.database_url, ROOT / "var")
    started = time.monotonic()
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", "--noinput", verbosity=0)
        from bench.semantic.report import print_report
        from bench.semantic.speed import run_speed

        results = {}
        if not args.skip_eval:
            from bench.semantic.evaluation import run_evaluation

            results["evaluation"] = run_evaluation(_team("eval"))
        results["speed"] = run_speed(args, _team)
        print_report(results, args, time.monotonic() - started)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            drop_database(args.database_url)
    return 0


def _team(slug: str):  # type: ignore[no-untyped-def]
    from memoryadmin.audit import Actor
    from memoryadmin.services import team_create

    return team_create(actor=Actor.system(), slug=slug, name=slug.title())


raise SystemExit(main(sys.argv[1:])) if __name__ == "__main__" else None
