"""`python -m bench` still runs end to end at tiny sizes. Asserts the table, never a speed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _database_url(tmp_path: Path) -> str:
    """The suite's own server when it runs on PostgreSQL (a scratch database), else SQLite."""
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        base = url.rsplit("/", 1)[0]
        return f"{base}/memoryadmin_bench_smoke_{os.getpid()}"
    return f"sqlite:///{tmp_path / 'bench.sqlite3'}"


@pytest.mark.timeout(660)
def test_it_runs_the_quick_benchmarks_at_tiny_sizes_and_prints_the_table(tmp_path):
    command = [
        sys.executable,
        "-m",
        "bench",
        "--quick",
        "--chunks",
        "200",
        "--records",
        "30",
        "--memories",
        "30",
        "--proposals",
        "5",
        "--requests",
        "3",
        "--database-url",
        _database_url(tmp_path),
        "--workdir",
        str(tmp_path / "work"),
        "--write-docs",
        str(tmp_path / "performance.md"),
        "--quiet",
    ]
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for name in (
        "import, empty team",
        "re-import, all duplicates",
        "export, JSON",
        "export, NDJSON stream",
        "source refresh, cold",
        "source refresh, unchanged",
        "review: index (sync)",
        "review: batch approve, commit, push",
        "web: review queue (test client)",
        "web: source page (gunicorn)",
        "agents: search (REST, gunicorn)",
        "agents: precheck (REST, gunicorn)",
        "agents: search (MCP tools/call)",
        "agents: precheck (MCP tools/call)",
    ):
        assert f"| {name} |" in result.stdout, name
    # the physical-limit baselines, the earlier ones beside them
    for baseline in (
        "read + C parse",
        "clone + C parse",
        "parse + checksum + look-up + upserts",
        "read + strict parse",
        "COPY FROM",
        "COPY TO",
        "shell + git",
    ):
        assert baseline in result.stdout, baseline
    assert "| earlier baseline | growth | peak RSS | in CPU |" in result.stdout
    # the CPU comparison: the process's own (and on PostgreSQL its backends'), both sides
    cold = next(line for line in result.stdout.splitlines() if "| source refresh, cold |" in line)
    assert re.search(r"\| \d+\.\dx \([\d.]+ (s|ms|us) / [\d.]+ (s|ms|us)\) \|$", cold), cold
    written = (tmp_path / "performance.md").read_text(encoding="utf-8")
    assert "<!-- bench:results:begin -->" in written and "| export, JSON |" in written
