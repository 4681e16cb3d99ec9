"""The agents bench's paced (open-loop) load: requests leave on their schedule, and latency
counts from the scheduled send time, so a server slower than the schedule shows its queue."""

from __future__ import annotations

import threading
import time
from contextlib import nullcontext

from bench.load import BAR_MS, paced_sweep, run_paced


def _client():  # type: ignore[no-untyped-def]
    return nullcontext(None)


def test_it_sends_each_request_number_once_at_the_stated_rate():
    seen: list[int] = []
    lock = threading.Lock()

    def request(client, n):  # type: ignore[no-untyped-def]
        with lock:
            seen.append(n)
        return 200

    found = run_paced(_client, request, clients=4, rate=40, seconds=0.5, first=100)
    assert sorted(seen) == list(range(100, 120))  # 4 clients x 5 requests, numbered from 100
    assert found["count"] == 20
    assert 20 <= found["achieved"] <= 60  # ~40/s, not as fast as the threads could go
    assert found["p95_ms"] < 4 * BAR_MS  # a no-op server: only the wake-up jitter


def test_it_counts_the_queue_when_the_server_is_slower_than_the_schedule():
    server = threading.Lock()  # one request at a time, 20 ms each: at most 50/s

    def request(client, n):  # type: ignore[no-untyped-def]
        with server:
            time.sleep(0.02)
        return 200

    found = run_paced(_client, request, clients=4, rate=200, seconds=0.4)
    # 80 requests at 50/s take ~1.6 s: the last waited ~1.2 s behind its scheduled time.
    # Timed from the actual send, each would look like ~20-80 ms.
    assert found["p99_ms"] > 600


def test_the_sweep_stops_past_the_bar_but_always_measures_the_stated_rate():
    def request(client, n):  # type: ignore[no-untyped-def]
        time.sleep(0.06)  # every request misses the 50 ms bar
        return 200

    found = paced_sweep(_client, request, clients=2, rates=[4, 8, 16, 32], seconds=0.5, through=8)
    assert [run["rate"] for run in found["runs"]] == [4, 8]
    assert found["max_rate"] == 0.0
