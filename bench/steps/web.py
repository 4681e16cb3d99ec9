"""Web steps: a logged-in session and request timings through the test client."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.steps.helpers import _user
from bench.steps.measure import Probe

# -- web ------------------------------------------------------------------------------------


def web_setup(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """A logged-in session for the pages' teams; the cookie serves the gunicorn run too.

    PostgreSQL: ANALYZE first. The steps before made the pages' rows seconds ago, before
    autovacuum's first look (it analyses a table within a minute of such a change): without
    statistics the planner took a 10,000-record snapshot for 3 rows, and read and sorted all
    of it for a page of 50 (7-9 ms a view, 98 ms the first time) where an index gives 0.2 ms."""
    from django.db import connection
    from django.test import Client

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")

    user = _user("bench-admin", args["teams"], role="admin")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    return {"sessionid": client.cookies["sessionid"].value}


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]
    return {"p50_ms": statistics.median(ordered) * 1000, "p95_ms": p95 * 1000}


def time_requests(get: Callable[[str], int], urls: dict[str, str], count: int) -> dict[str, Any]:
    results = {}
    for name, url in urls.items():
        get(url)  # warm caches, as a second visit would
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            status = get(url)
            samples.append(time.perf_counter() - start)
            # /healthz answers 503 while no worker's heartbeat is fresh: still a full answer.
            if status != 200 and not (url == "/healthz" and status == 503):
                raise RuntimeError(f"{url} answered {status}")
        results[name] = _percentiles(samples)
    return results


def web_client(args: dict[str, Any], probe: Probe) -> dict[str, Any]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_HOST="127.0.0.1")
    client.cookies["sessionid"] = args["sessionid"]
    urls = args["urls"]
    queries = {}
    for name, url in urls.items():
        with CaptureQueriesContext(connection) as captured:
            client.get(url)
        queries[name] = len(captured.captured_queries)
    with probe():
        timings = time_requests(lambda url: client.get(url).status_code, urls, args["requests"])
    return {"timings": timings, "queries": queries}
