"""The bench's measurements: each benchmark runs its steps (`Run.step`, one process each)
and adds rows that compare a result with a baseline of the same run."""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import data
from bench.report import Row, _mb, _ratio, _seconds
from bench.steps.measure import RESULT_PREFIX

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Run:
    args: argparse.Namespace
    env: dict[str, str]
    workdir: Path
    rows: list[Row] = field(default_factory=list)

    def step(self, name: str, **kwargs: Any) -> dict[str, Any]:
        command = [sys.executable, "-m", "bench.steps", name, json.dumps(kwargs)]
        result = subprocess.run(
            command, cwd=ROOT, env=self.env, capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            raise SystemExit(f"bench step {name} failed:\n{result.stdout}\n{result.stderr}")
        for line in reversed(result.stdout.splitlines()):
            if line.startswith(RESULT_PREFIX):
                return json.loads(line[len(RESULT_PREFIX) :])
        raise SystemExit(f"bench step {name} printed no result:\n{result.stdout}")

    def add(self, row: Row) -> None:
        self.rows.append(row)
        if not self.args.quiet:
            print(f"  {row.benchmark} [{row.size}]: {row.measured} vs {row.baseline} → {row.ratio}")


def _against(
    run: Run,
    name: str,
    size: str,
    result: dict[str, Any],
    base: tuple[str, dict[str, Any]],
    target: str,
    limit: float | None,
    *,
    seconds: str = "seconds",
    also: bool = True,
) -> None:
    """A row: `result` as a ratio to a baseline of the same run; holds at `limit` or below
    (and `also`); `limit` None: informative."""
    ratio = _ratio(result[seconds], base[1]["seconds"])
    holds = None if limit is None else ratio <= limit and also
    run.add(
        Row(
            name,
            size,
            _seconds(result[seconds]),
            f"{base[0]} {_seconds(base[1]['seconds'])}",
            f"{ratio:.1f}x",
            target,
            holds,
            _mb(result["rss_growth_mb"]),
        )
    )


def _faster(
    run: Run,
    name: str,
    size: str,
    fast: dict[str, Any],
    slow: tuple[str, dict[str, Any]],
    at_least: float,
) -> None:
    """A row: how many times faster `fast` was than `slow`; holds at `at_least` or more."""
    speedup = slow[1]["seconds"] / fast["seconds"] if fast["seconds"] else float("inf")
    run.add(
        Row(
            name,
            size,
            _seconds(fast["seconds"]),
            f"{slow[0]} {_seconds(slow[1]['seconds'])}",
            f"{speedup:.1f}x faster",
            f">= {at_least:g}x faster",
            speedup >= at_least,
            _mb(fast["rss_growth_mb"]),
        )
    )


# -- benchmarks -----------------------------------------------------------------------------


def bench_brain(run: Run) -> None:
    """1 and 2: import (fresh, then all duplicates) and export (JSON, NDJSON) per size."""
    for chunks in run.args.chunk_sizes:
        label = f"{chunks:,} chunks"
        path = run.workdir / f"bundle-{chunks}.json"
        sizes = data.write_bundle(path, chunks)
        label = f"{chunks:,} chunks, {sizes['memory_edges']:,} edges, {sizes['entities']:,} ent."
        team = f"bench-brain-{chunks}"
        base = import_base = run.step("import_baseline", team=f"{team}-copy", path=str(path))
        first = run.step("brain_import", team=team, path=str(path))
        if first["chunks"]["inserted"] != chunks:
            raise SystemExit(f"import inserted {first['chunks']} of {chunks}")
        again = run.step("brain_import", team=team, path=str(path))
        names = ("import, empty team", "re-import, all duplicates")
        _import_rows(run, names, label, base, first, again)
        base = run.step("export_baseline", team=team)
        for kind in ("json", "ndjson"):
            result = run.step("brain_export", team=team, kind=kind)
            name = f"export, {'JSON' if kind == 'json' else 'NDJSON stream'}"
            target = "<= 3x COPY, < 150 MB"
            also = result["rss_growth_mb"] < 150
            _against(run, name, label, result, ("COPY TO", base), target, 3, also=also)
        result = run.step("brain_csv", team=team)
        if result["rows"] != chunks:
            raise SystemExit(f"the CSV listed {result['rows']} of {chunks} chunks")
        also = result["rss_growth_mb"] < 150
        name = f"Brain page CSV download ({result['queries']} queries)"
        _against(run, name, label, result, ("COPY TO", base), "<= 3x COPY, < 150 MB", 3, also=also)
        path.unlink(missing_ok=True)
        bench_own_export(run, team, label, base_import=import_base)


def _import_rows(
    run: Run,
    names: tuple[str, str],
    label: str,
    base: dict[str, Any],
    first: dict[str, Any],
    again: dict[str, Any],
) -> None:
    """The rows of an import into an empty team (against COPY) and of the same again."""
    _against(run, names[0], label, first, ("COPY FROM", base), "<= 5x COPY", 5)
    _faster(run, names[1], label, again, ("first import", first), 5)


def bench_own_export(run: Run, team: str, label: str, *, base_import: dict[str, Any]) -> None:
    """2 again with the bundle our export wrote: manifest last (so the head is read in a pass
    of its own), a checksum to verify, canonical records. The COPY baseline is the same."""
    path = run.workdir / f"export-{team}.json"
    run.step("brain_export_file", team=team, path=str(path))
    first = run.step("brain_import", team=f"{team}-own", path=str(path))
    again = run.step("brain_import", team=f"{team}-own", path=str(path))
    names = ("import of our own export, empty team", "re-import of our own export")
    _import_rows(run, names, label, base_import, first, again)
    path.unlink(missing_ok=True)


def bench_source(run: Run) -> int:
    """3: cold and unchanged refresh of a local source; returns the source id for the web run."""
    records = run.args.records
    root = run.workdir / "source"
    data.write_source(root, records)
    label = f"{records:,} records"
    base = run.step("source_baseline", path=str(root))
    source_id = run.step("source_setup", team="bench-source", path=str(root))["source_id"]
    cold = run.step("source_refresh", source_id=source_id)
    warm = run.step("source_refresh", source_id=source_id)
    _against(
        run, "source refresh, cold", label, cold, ("read + parse", base), "<= 2x read + parse", 2
    )
    _faster(run, "source refresh, unchanged", label, warm, ("cold", cold), 20)
    return source_id


def bench_review_index(run: Run) -> tuple[int, Path]:
    memories, proposals = run.args.memories, run.args.proposals
    bare = data.write_repository(run.workdir / "git", memories, proposals)
    repository_id = run.step("review_setup", team="bench-review", remote_url=bare.as_uri())[
        "repository_id"
    ]
    base = run.step("index_baseline", remote_url=bare.as_uri())
    index = run.step("review_index", repository_id=repository_id)
    if index["proposed"] != proposals:
        raise SystemExit(f"indexed {index['proposed']} proposals, expected {proposals}")
    size = f"{memories:,} memories, {proposals:,} proposals"
    _against(run, "review: index (sync)", size, index, ("clone + parse", base), "(none set)", None)
    return repository_id, bare


def bench_review_approve(run: Run, repository_id: int, bare: Path) -> None:
    memories, proposals = run.args.memories, run.args.proposals
    paths = data.proposal_paths(memories, proposals)
    base = run.step("review_baseline", bare=str(bare), paths=paths)
    result = run.step("review_approve", team="bench-review", repository_id=repository_id)
    label = f"{proposals:,} proposals → 1 commit"
    git = ("shell + git", base)
    name = "review: batch approve, commit, push"
    _against(run, name, label, result, git, "<= 2x git", 2, seconds="pushed_seconds")
    name = "review: … and re-index after the push"
    _against(run, name, label, result, git, "(informative)", None)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _gunicorn(run: Run, cookie: str, urls: dict[str, str]) -> dict[str, Any]:
    import httpx

    from bench.steps.web import time_requests

    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "memoryadmin.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=run.env,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, cookies={"sessionid": cookie}, timeout=30) as client:
            for _ in range(300):
                try:
                    client.get("/accounts/login/")
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            return time_requests(lambda url: client.get(url).status_code, urls, run.args.requests)
    finally:
        server.terminate()
        server.wait(timeout=30)


def bench_web(run: Run, source_id: int | None, review: bool) -> None:
    """5: p50/p95 of the review queue and the source page, test client and real gunicorn."""
    urls = {"baseline": "/accounts/login/"}
    if review:
        urls["review queue"] = "/t/bench-review/reviews/"
    if source_id is not None:
        urls["source page"] = f"/t/bench-source/sources/{source_id}/"
    cookie = run.step("web_setup", teams=["bench-review", "bench-source"])["sessionid"]
    client = run.step("web_client", sessionid=cookie, urls=urls, requests=run.args.requests)
    served = _gunicorn(run, cookie, urls)
    sizes = {
        "review queue": f"{run.args.proposals:,} proposals",
        "source page": f"{run.args.records:,} records",
    }
    for how, timings in (("test client", client["timings"]), ("gunicorn", served)):
        base = timings["baseline"]
        for name, t in timings.items():
            if name == "baseline":
                continue
            queries = client["queries"][name]
            run.add(
                Row(
                    f"web: {name} ({how})",
                    f"{sizes[name]}, {queries} queries",
                    f"p50 {t['p50_ms']:.0f} ms, p95 {t['p95_ms']:.0f} ms",
                    f"login page p95 {base['p95_ms']:.1f} ms",
                    f"{_ratio(t['p95_ms'], base['p95_ms']):.1f}x",
                    "p95 < 100 ms",
                    t["p95_ms"] < 100,
                )
            )
