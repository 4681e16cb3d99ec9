"""Measuring one step: its time, and how far the process's peak RSS rose (`Probe`)."""

from __future__ import annotations

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
