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
        profiler = _profiler()
        start = time.perf_counter()
        yield
        self.seconds = time.perf_counter() - start
        if profiler is not None:
            profiler.stop()
            _write_profile(profiler)
        after = _status_kb("VmHWM") if reset else None
        if after is None:
            after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.rss_growth_mb = max(0, after - before) / 1024
