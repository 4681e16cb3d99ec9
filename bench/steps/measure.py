"""Measuring one step: its time, and how far the process's peak RSS rose (`Probe`)."""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager

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


def _profiler():  # type: ignore[no-untyped-def]
    """`BENCH_PROFILE=DIR`: profile each timed section with pyinstrument (installed by hand,
    not a dependency) and write its call tree to DIR/<step>-<pid>.txt; the times the table
    prints then include the profiler's own."""
    if not os.environ.get("BENCH_PROFILE"):
        return None
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    return profiler


def _write_profile(profiler) -> None:  # type: ignore[no-untyped-def]
    import sys
    from pathlib import Path

    folder = Path(os.environ["BENCH_PROFILE"])
    folder.mkdir(parents=True, exist_ok=True)
    step = sys.argv[1] if len(sys.argv) > 1 else "step"
    text = profiler.output_text(unicode=True, show_all=False)
    (folder / f"{step}-{os.getpid()}.txt").write_text(text, encoding="utf-8")


def _ticks(pid: int) -> int | None:
    """A process's user + system CPU in clock ticks, from /proc (None if gone or unreadable)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))


_watcher = None  # the probe's own connection (psycopg), opened at the first section


def _backends() -> dict[int, int] | None:
    """pid -> CPU ticks of every PostgreSQL backend this process has open, found by the
    application name bench/settings.py gives all its connections; None where the database is
    not a PostgreSQL server on this machine (SQLite; a remote host's /proc is not ours)."""
    from django.conf import settings
    from django.db import connection

    name = settings.DATABASES["default"].get("OPTIONS", {}).get("application_name")
    if connection.vendor != "postgresql" or not name:
        return None
    if settings.DATABASES["default"].get("HOST") not in ("", "127.0.0.1", "localhost", "::1"):
        return None
    global _watcher
    if _watcher is None:  # its own connection: the step's may be inside a failed transaction
        import psycopg

        params = {**connection.get_connection_params(), "application_name": f"{name}-probe"}
        _watcher = psycopg.connect(**params, autocommit=True)
    rows = _watcher.execute(
        "SELECT pid FROM pg_stat_activity WHERE application_name = %s", [name]
    ).fetchall()
    pids = [pid for (pid,) in rows]
    ticks = {pid: _ticks(pid) for pid in pids}
    return {pid: value for pid, value in ticks.items() if value is not None} or None


def _own_cpu() -> tuple[float, float]:
    """This process's CPU (all threads) and its waited children's, at microsecond resolution
    (os.times counts clock ticks: 10 ms)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time(), children.ru_utime + children.ru_stime


def _backends_spent(before: dict[int, int] | None) -> float:
    """CPU seconds the process's backends spent since `before` (a backend opened meanwhile
    counts whole; one closed meanwhile is lost, which the bench's steps do not do)."""
    after = _backends()
    if after is None:
        return 0.0
    before = before or {}
    ticks = sum(value - before.get(pid, 0) for pid, value in after.items())
    return ticks / os.sysconf("SC_CLK_TCK")


class Probe:
    """Times one section and records how far the process's peak RSS rose above its start, and
    the CPU it cost: the process's threads, the children it waited for (git, a shell) and its
    PostgreSQL backends. CPU is steadier than wall time on a shared machine, and it counts
    the work two cores overlap once each."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.rss_growth_mb = 0.0
        self.cpu_seconds: float | None = None
        # its parts: (the process, the children it waited for, its PostgreSQL backends)
        self.cpu_parts: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @contextmanager
    def __call__(self) -> Iterator[None]:
        import gc

        gc.collect()
        reset = _reset_peak()
        before = _status_kb("VmRSS") if reset else None
        if before is None:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        backends = _backends()
        own = _own_cpu()
        profiler = _profiler()
        start = time.perf_counter()
        yield
        self.seconds = time.perf_counter() - start
        process, children = (now - then for now, then in zip(_own_cpu(), own, strict=True))
        self.cpu_parts = (process, children, _backends_spent(backends))
        self.cpu_seconds = sum(self.cpu_parts)
        if profiler is not None:
            profiler.stop()
            _write_profile(profiler)
        after = _status_kb("VmHWM") if reset else None
        if after is None:
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.rss_growth_mb = max(0, after - before) / 1024
