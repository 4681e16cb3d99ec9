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
from bench.report import Row, _mb, _ratio, _seconds, cpu_ratio
from bench.steps.measure import RESULT_PREFIX

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Run:
    args: argparse.Namespace
    env: dict[str, str]
    workdir: Path
    rows: list[Row] = field(default_factory=list)
    # memories -> (repository id, bare remote) of each indexed review size
    repositories: dict[int, tuple[int, Path]] = field(default_factory=dict)

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
    earlier: tuple[str, dict[str, Any]] | None = None,
    scale: int | None = None,
) -> None:
    """A row: `result` as a ratio to a baseline of the same run; holds at `limit` or below
    (and `also`); `limit` None: informative. `earlier`: the baseline of earlier rounds, whose
    ratio is shown too."""
    ratio = _ratio(result[seconds], base[1]["seconds"])
    before = ""
    if earlier is not None:
        before = f"{_ratio(result[seconds], earlier[1]['seconds']):.1f}x {earlier[0]}"
        before += f" {_seconds(earlier[1]['seconds'])}"
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
            before,
            result[seconds],
            scale,
            cpu=cpu_ratio(result, base[1]) if seconds == "seconds" else "",
        )
    )


def _faster(
    run: Run,
    name: str,
    size: str,
    fast: dict[str, Any],
    slow: tuple[str, dict[str, Any]],
    at_least: float,
    *,
    scale: int | None = None,
    limit: tuple[str, dict[str, Any]] | None = None,
) -> None:
    """A row: how many times faster `fast` was than `slow`; holds at `at_least` or more.
    `limit`: a physical-limit baseline, whose ratio is shown in the earlier-baseline column."""
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
            ""
            if limit is None
            else f"{_ratio(fast['seconds'], limit[1]['seconds']):.1f}x {limit[0]} "
            f"{_seconds(limit[1]['seconds'])}",
            fast["seconds"],
            scale,
            cpu=cpu_ratio(fast, slow[1], faster=True),
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
        floor = run.step("reimport_baseline", team=team, path=str(path))
        names = ("import, empty team", "re-import, all duplicates")
        _import_rows(run, names, label, base, first, again, floor, chunks)
        base = run.step("export_baseline", team=team)
        for kind in ("json", "ndjson"):
            result = run.step("brain_export", team=team, kind=kind)
            name = f"export, {'JSON' if kind == 'json' else 'NDJSON stream'}"
            target = "<= 3x COPY, < 150 MB"
            also = result["rss_growth_mb"] < 150
            _against(
                run, name, label, result, ("COPY TO", base), target, 3, also=also, scale=chunks
            )
        result = run.step("brain_csv", team=team)
        if result["rows"] != chunks:
            raise SystemExit(f"the CSV listed {result['rows']} of {chunks} chunks")
        also = result["rss_growth_mb"] < 150
        name = f"Brain page CSV download ({result['queries']} queries)"
        _against(run, name, label, result, ("COPY TO", base), "<= 3x COPY, < 150 MB", 3, also=also)
        bench_own_export(run, team, label, base_import=import_base, scale=chunks)
        path.unlink(missing_ok=True)


def _import_rows(
    run: Run,
    names: tuple[str, str],
    label: str,
    base: dict[str, Any],
    first: dict[str, Any],
    again: dict[str, Any],
    floor: dict[str, Any],
    scale: int,
) -> None:
    """The rows of an import into an empty team (against COPY) and of the same again (against
    its irreducible work: parse, checksum, hash look-up, edge and entity upserts)."""
    _against(run, names[0], label, first, ("COPY FROM", base), "<= 5x COPY", 5, scale=scale)
    target = "<= 2x irreducible"
    irreducible = ("parse + checksum + look-up + upserts", floor)
    earlier = ("first import", first)
    _against(run, names[1], label, again, irreducible, target, 2, earlier=earlier, scale=scale)


def bench_own_export(
    run: Run, team: str, label: str, *, base_import: dict[str, Any], scale: int
) -> None:
    """2 again with the bundle our export wrote: manifest last (the importer takes it from the
    file's tail and checks it in its one pass), a checksum to verify, canonical records. The
    COPY baseline is the same."""
    path = run.workdir / f"export-{team}.json"
    run.step("brain_export_file", team=team, path=str(path))
    first = run.step("brain_import", team=f"{team}-own", path=str(path))
    again = run.step("brain_import", team=f"{team}-own", path=str(path))
    floor = run.step("reimport_baseline", team=f"{team}-own", path=str(path))
    names = ("import of our own export, empty team", "re-import of our own export")
    _import_rows(run, names, label, base_import, first, again, floor, scale)
    path.unlink(missing_ok=True)


def bench_source(run: Run) -> int | None:
    """3: cold and unchanged refresh of a local source at each size; returns the first size's
    source id for the web run."""
    first_id = None
    for records in run.args.records:
        root = run.workdir / f"source-{records}"
        data.write_source(root, records)
        label = f"{records:,} records"
        limit = ("read + C parse", run.step("source_c_baseline", path=str(root)))
        strict = ("read + strict parse", run.step("source_baseline", path=str(root)))
        team = "bench-source" if first_id is None else f"bench-source-{records}"
        source_id = run.step("source_setup", team=team, path=str(root))["source_id"]
        first_id = source_id if first_id is None else first_id
        cold = run.step("source_refresh", source_id=source_id)
        warm = run.step("source_refresh", source_id=source_id)
        target = "<= 3x read + C parse"
        name = "source refresh, cold"
        _against(run, name, label, cold, limit, target, 3, earlier=strict, scale=records)
        name = "source refresh, unchanged"
        _faster(run, name, label, warm, ("cold", cold), 20, scale=records, limit=limit)
    if run.args.records:
        parse = run.step("parse_compare", path=str(run.workdir / f"source-{run.args.records[0]}"))
        per_file = {"seconds": parse["strict"], "rss_growth_mb": 0.0}
        events = ("libyaml events", {"seconds": parse["events"]})
        size = f"{parse['files']:,} records, per file"
        name, target = "strict front matter parse", "<= 3x libyaml events"
        _against(run, name, size, per_file, events, target, 3)
    return first_id


def review_sizes(run: Run) -> list[tuple[int, int]]:
    """(memories, proposals) per size: a fifth of the asked size, then the size itself, for the
    growth factor (the last size is the one the web and agent benches use)."""
    memories, proposals = run.args.memories, run.args.proposals
    small = (memories // 5, proposals // 5)
    return [small, (memories, proposals)] if small[1] else [(memories, proposals)]


def bench_review_index(run: Run) -> tuple[int, Path]:
    """4: index (sync) per size; returns the last size's repository and bare remote."""
    found: tuple[int, Path] | None = None
    for memories, proposals in review_sizes(run):
        found = run.repositories[memories] = _review_index(run, memories, proposals)
    assert found is not None
    return found


def _review_index(run: Run, memories: int, proposals: int) -> tuple[int, Path]:
    bare = data.write_repository(run.workdir / f"git-{memories}", memories, proposals)
    repository_id = run.step(
        "review_setup", team=f"bench-review-{memories}", remote_url=bare.as_uri()
    )["repository_id"]
    limit = ("clone + C parse", run.step("index_c_baseline", remote_url=bare.as_uri()))
    strict = ("clone + strict parse", run.step("index_baseline", remote_url=bare.as_uri()))
    index = run.step("review_index", repository_id=repository_id)
    if index["proposed"] != proposals:
        raise SystemExit(f"indexed {index['proposed']} proposals, expected {proposals}")
    size = f"{memories:,} memories, {proposals:,} proposals"
    name, target = "review: index (sync)", "<= 2x clone + C parse"
    _against(run, name, size, index, limit, target, 2, earlier=strict, scale=memories)
    return repository_id, bare


def bench_review_approve(run: Run, repository_id: int, bare: Path) -> None:
    """4: batch approval of every proposal per size (each size's indexed repository; the last
    is the one bench_review_index returned)."""
    for memories, proposals in review_sizes(run):
        found = run.repositories.get(memories, (repository_id, bare))
        _review_approve(run, *found, memories, proposals)


def _review_approve(
    run: Run, repository_id: int, bare: Path, memories: int, proposals: int
) -> None:
    paths = data.proposal_paths(memories, proposals)
    # best of three: git's time here swings up to three-fold between runs (the disk)
    runs = [run.step("review_baseline", bare=str(bare), paths=paths) for _ in range(3)]
    base = min(runs, key=lambda measured: measured["seconds"])
    team = f"bench-review-{memories}"
    result = run.step("review_approve", team=team, repository_id=repository_id)
    label = f"{proposals:,} proposals → 1 commit"
    git = ("shell + git", base)
    name = "review: batch approve, commit, push"
    _against(
        run, name, label, result, git, "<= 2x git", 2, seconds="pushed_seconds", scale=proposals
    )
    name = "review: … and re-index after the push"
    _against(run, name, label, result, git, "(informative)", None, scale=proposals)


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
    urls = {"baseline": "/accounts/login/", "healthz": "/healthz"}
    if review:
        urls["review queue"] = f"/t/bench-review-{run.args.memories}/reviews/"
    if source_id is not None:
        urls["source page"] = f"/t/bench-source/sources/{source_id}/"
    teams = [f"bench-review-{run.args.memories}", "bench-source"]
    cookie = run.step("web_setup", teams=teams)["sessionid"]
    client = run.step("web_client", sessionid=cookie, urls=urls, requests=run.args.requests)
    served = _gunicorn(run, cookie, urls)
    sizes = {
        "healthz": "database, broker, worker heartbeat",
        "review queue": f"{run.args.proposals:,} proposals",
        "source page": f"{run.args.records[0]:,} records",
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
