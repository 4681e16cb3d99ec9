"""Container health of the web process: does gunicorn answer /healthz with a working database?

/healthz answers 503 when no Celery worker's heartbeat is fresh; that is worth an alert, but
restarting the web container would not fix it, so the container counts as healthy when the web
process itself is (it answered and its database check passed).
Exit status 0 = healthy, 1 = unhealthy.
Standard library only: it runs with the image's Python, outside Django.
"""

from __future__ import annotations

import http.client
import json
import os
import sys

PORT = 8000


def host_header() -> str:
    # Django rejects Host headers outside ALLOWED_HOSTS with 400, so send one it accepts.
    hosts = [h.strip() for h in os.environ.get("MEMORYADMIN_ALLOWED_HOSTS", "").split(",")]
    for host in hosts:
        if host and host != "*":
            return host.lstrip(".")
    return "localhost"


def main() -> int:
    connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=8)
    try:
        connection.request("GET", "/healthz", headers={"Host": host_header()})
        response = connection.getresponse()
        body = response.read()
    except OSError as exc:
        print(f"unhealthy: {exc}")
        return 1
    finally:
        connection.close()
    if response.status not in (200, 503):
        print(f"unhealthy: HTTP {response.status}")
        return 1
    try:
        database_ok = json.loads(body)["checks"]["database"]["ok"] is True
    except (ValueError, KeyError, TypeError):
        database_ok = False
    print(f"HTTP {response.status}: {body.decode('utf-8', 'replace')}")
    return 0 if database_ok else 1


if __name__ == "__main__":
    sys.exit(main())
