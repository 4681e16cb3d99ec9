"""Concurrent load for the agents benchmark: N client threads, each with its own HTTP client,
sharing a fixed number of requests; latency percentiles and throughput."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

# One request: (client, n) -> the HTTP status; raises on a transport error.
BARRIER_SECONDS = 300  # every client has warmed up by then, or the load fails
Request = Callable[[Any, int], int]


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50, p95 and p99 of `samples` (seconds) in milliseconds (nearest rank)."""
    ordered = sorted(samples)

    def rank(p: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, round(p * len(ordered)) - 1))] * 1000

    return {
        "p50_ms": statistics.median(ordered) * 1000,
        "p95_ms": rank(0.95),
        "p99_ms": rank(0.99),
        "count": len(ordered),
    }


def run_load(
    make_client: Callable[[], Any], request: Request, *, clients: int, total: int
) -> dict[str, Any]:
    """`total` requests from `clients` threads at once (each its share, round-robin over the
    request numbers); every answer must be 200. Each client warms up with one request first."""
    started: list[float] = []
    ready = threading.Barrier(clients, action=lambda: started.append(time.perf_counter()))
    failures: list[str] = []
    cpu_start = time.process_time()

    def work(index: int) -> list[float]:
        samples: list[float] = []
        try:
            with make_client() as client:
                # warm: connections, plans, caches (its own request number: no query repeats)
                status = request(client, total + index)
                if status != 200:
                    failures.append(f"warm-up {index} answered {status}")
                ready.wait(timeout=BARRIER_SECONDS)
                for n in range(index, total, clients):
                    start = time.perf_counter()
                    status = request(client, n)
                    samples.append(time.perf_counter() - start)
                    if status != 200:
                        failures.append(f"request {n} answered {status}")
        except BaseException:
            ready.abort()  # the other clients stop waiting for this one; the error is raised
            raise
        return samples

    with ThreadPoolExecutor(clients) as pool:
        samples = [s for part in pool.map(work, range(clients)) for s in part]
    elapsed = time.perf_counter() - started[0]
    if failures:
        raise RuntimeError(f"{len(failures)} failed requests, first: {failures[0]}")
    # The load generator's own CPU (all its threads, warm-up included), per request: on a
    # machine this small it competes with the server, so the table says how much it took.
    client_cpu = (time.process_time() - cpu_start) / (len(samples) + clients)
    return {
        **percentiles(samples),
        "throughput": len(samples) / elapsed,
        "client_cpu_ms": client_cpu * 1000,
    }


# -- paced (open-loop) load ------------------------------------------------------------------

BAR_MS = 50.0  # issue #15's and #16's p95 bar


def run_paced(
    make_client: Callable[[], Any],
    request: Request,
    *,
    clients: int,
    rate: float,
    seconds: float,
    first: int = 0,
) -> dict[str, Any]:
    """Open loop: `clients` threads, each sending on a fixed schedule of one request every
    clients / rate seconds (the clients' schedules staggered evenly, so the total is `rate`
    per second), for `seconds`. Latency is measured from each request's *scheduled* send time,
    not from when a busy client got round to sending it: a server that falls behind shows its
    queueing in the percentiles instead of slowing the load down (no coordinated omission).
    Request numbers start at `first` (give each run its own range: no query repeats)."""
    interval = clients / rate
    per_client = max(1, round(seconds * rate / clients))
    failures: list[str] = []
    ready = threading.Barrier(clients)
    origin: list[float] = []

    def work(index: int) -> list[float]:
        samples: list[float] = []
        try:
            with make_client() as client:
                if ready.wait(timeout=BARRIER_SECONDS) == 0:
                    origin.append(time.perf_counter() + 0.2)
                ready.wait(timeout=BARRIER_SECONDS)  # every client reads the same origin
                start = origin[0] + index * interval / clients
                for k in range(per_client):
                    scheduled = start + k * interval
                    pause = scheduled - time.perf_counter()
                    if pause > 0:
                        time.sleep(pause)
                    n = first + k * clients + index
                    status = request(client, n)
                    samples.append(time.perf_counter() - scheduled)
                    if status != 200:
                        failures.append(f"request {n} answered {status}")
        except BaseException:
            ready.abort()
            raise
        return samples

    with ThreadPoolExecutor(clients) as pool:
        samples = [s for part in pool.map(work, range(clients)) for s in part]
    elapsed = time.perf_counter() - origin[0]
    if failures:
        raise RuntimeError(f"{len(failures)} failed requests, first: {failures[0]}")
    return {**percentiles(samples), "rate": rate, "achieved": len(samples) / elapsed}


def paced_sweep(
    make_client: Callable[[], Any],
    request: Request,
    *,
    clients: int,
    rates: list[float],
    seconds: float,
    first: int = 0,
    through: float = 0.0,
) -> dict[str, Any]:
    """run_paced at each of `rates` (ascending) until p95 reaches the bar, and at least up to
    the rate `through` (the stated one, always measured); the highest rate whose p95 stayed
    under the bar (0 when even the first did not). Above a rate that misses, queueing only
    grows, so the sweep stops there."""
    runs: list[dict[str, Any]] = []
    for rate in rates:
        found = run_paced(
            make_client, request, clients=clients, rate=rate, seconds=seconds, first=first
        )
        first += found["count"] + clients
        runs.append(found)
        if found["p95_ms"] >= BAR_MS and rate >= through:
            break
    passing = [r["rate"] for r in runs if r["p95_ms"] < BAR_MS]
    return {"runs": runs, "max_rate": max(passing, default=0.0), "next": first}
